/**
 * The operator console's Routes, Margin and Message pages: the SMPP routes with whether a worker
 * process has each bound, adding, changing and removing them (as `pigeon route` does); the margin
 * per day and route (as `pigeon report margin`); and one message with the route that took it (as
 * `pigeon message show`). Registered inside the operator area's scope (operator-pages.ts), behind
 * its session guard and CSRF check. A route's password is never shown, not even in the edit form.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { acting } from '../acting.ts';
import type { RouteInput } from '../../domain/smpp-routes.ts';
import { AppError } from '../../errors/catalogue.ts';
import type { Context } from '../../services/context.ts';
import { marginReport, operatorMessage } from '../../services/routes/margin.ts';
import { addRoute, getRoute, listRoutes, removeRoute, updateRoute, type RouteWithState } from '../../services/routes/routes.ts';
import { html, type Html } from '../html.ts';
import { alert, csrfField, statusBadge, table, when } from './layout.ts';
import type { OperatorPageKit } from './operator-numbers-pages.ts';
import { field, seeOther } from './session-guard.ts';

const DAY_MS = 86_400_000;

function routeForm(csrf: string, route: RouteWithState | null): Html {
  const v = (value: string | number | null | undefined) => (value === null || value === undefined ? '' : String(value));
  const action = route ? `/operator/routes/${encodeURIComponent(route.name)}` : '/operator/routes';
  return html`<form method="post" action="${action}">${csrfField(csrf)}
${route ? html`` : html`<label for="route-name">Name</label><input id="route-name" type="text" name="name" required maxlength="40" pattern="[A-Za-z0-9_\\-]{1,40}">`}
<label for="route-prefixes">Prefixes (comma-separated, + for every recipient)</label><input id="route-prefixes" type="text" name="prefixes" required maxlength="2000" value="${route ? route.prefixes.join(',') : ''}">
<label for="route-host">Host</label><input id="route-host" type="text" name="host" required maxlength="253" value="${v(route?.host)}">
<label for="route-port">Port</label><input id="route-port" name="port" type="number" min="1" max="65535" required value="${v(route?.port ?? 2775)}">
<label for="route-system-id">system_id</label><input id="route-system-id" type="text" name="system_id" required maxlength="15" value="${v(route?.system_id)}">
<label for="route-password">Password${route ? ' (leave empty to keep it)' : ''}</label><input id="route-password" name="password" type="password" maxlength="8" autocomplete="new-password"${route ? '' : ' required'}>
<label for="route-system-type">system_type</label><input id="route-system-type" type="text" name="system_type" maxlength="12" value="${v(route?.system_type)}">
<label for="route-tps">Submits per second (0: no cap)</label><input id="route-tps" name="tps" type="number" min="0" value="${v(route?.tps ?? 0)}">
<label for="route-window">Window</label><input id="route-window" name="window" type="number" min="1" value="${v(route?.window ?? 10)}">
<label for="route-priority">Priority (higher first among the same prefix)</label><input id="route-priority" name="priority" type="number" min="0" value="${v(route?.priority ?? 0)}">
<label for="route-cost">Carrier cost per segment, in credits (empty: not recorded)</label><input id="route-cost" name="cost_per_segment" type="number" min="0" value="${v(route?.cost_per_segment)}">
<label for="route-failover">Failover codes</label><input id="route-failover" type="text" name="failover_codes" maxlength="200" value="${route ? route.failover_codes.join(',') : '0x08,0x14,0x45,0x58'}">
<div class="actions"><button type="submit">${route ? 'Save' : 'Add route'}</button></div></form>`;
}

function inputOf(body: unknown, editing: boolean): RouteInput {
  const input: RouteInput = {
    prefixes: field(body, 'prefixes'),
    host: field(body, 'host'),
    port: field(body, 'port'),
    systemId: field(body, 'system_id'),
    systemType: field(body, 'system_type'),
    tps: field(body, 'tps') || '0',
    window: field(body, 'window') || '10',
    priority: field(body, 'priority') || '0',
    costPerSegment: field(body, 'cost_per_segment'),
    failoverCodes: field(body, 'failover_codes'),
  };
  const password = field(body, 'password');
  if (password !== '' || !editing) input.password = password;
  return input;
}

function boundCell(r: RouteWithState): Html {
  if (r.bound) return html`<span class="badge badge-approved">Bound</span>`;
  const why = r.links.find((l) => l.last_error)?.last_error ?? (r.links.length === 0 ? 'no worker process running' : (r.links[0]?.state ?? ''));
  return html`<span class="badge badge-rejected">Unbound</span> <span class="muted">${why}</span>`;
}

export function operatorRoutesPages(app: FastifyInstance, ctx: Context, kit: OperatorPageKit): void {
  const routesPage = async (request: FastifyRequest, reply: FastifyReply, message?: { text: string; kind: 'ok' | 'error' }) => {
    const csrf = kit.csrf(request);
    const routes = await listRoutes(ctx);
    const rows = routes.map((r) => [
      html`<a href="/operator/routes/${encodeURIComponent(r.name)}"><strong>${r.name}</strong></a>`,
      r.prefixes.join(', '),
      String(r.priority),
      html`<code>${r.host}:${String(r.port)}</code>`,
      html`<code>${r.system_id}</code>`,
      r.cost_per_segment === null ? html`<span class="muted">not recorded</span>` : String(r.cost_per_segment),
      r.failover_codes.join(', '),
      boundCell(r),
      html`<form method="post" action="/operator/routes/${encodeURIComponent(r.name)}/remove" data-confirm="Remove route ${r.name}? Worker processes unbind from it within 2 seconds; what waits for it goes to the remaining routes.">${csrfField(csrf)}<button type="submit" class="danger" aria-label="Remove ${r.name}">Remove</button></form>`,
    ]);
    return kit.render(
      request,
      reply,
      'Routes',
      'routes',
      html`${message ? alert(message.text, message.kind) : html``}
<p>A message goes over the bound route with the longest matching prefix, the highest priority first; a route that refuses it with one of its failover codes, or does not answer, sends it on to the next. Changes reach every worker process within 2 seconds.${ctx.config.carrier === 'smpp' ? '' : html` <strong>CARRIER is ${ctx.config.carrier}: these routes are used once it is smpp.</strong>`}</p>
${table('SMPP routes', ['Name', 'Prefixes', 'Priority', 'Address', 'system_id', 'Cost per segment', 'Failover codes', 'Link', ''], rows, 'No routes yet.')}
<section><h2>Add a route</h2>${routeForm(csrf, null)}</section>`,
    );
  };

  const editPage = async (request: FastifyRequest, reply: FastifyReply, name: string, message?: { text: string; kind: 'ok' | 'error' }) => {
    const route = await getRoute(ctx, name);
    const links = route.links.map((l) => [statusBadge(l.state), l.last_error ?? '', when(l.seen_at)]);
    return kit.render(
      request,
      reply,
      `Route ${route.name}`,
      'routes',
      html`${message ? alert(message.text, message.kind) : html``}
<p><a href="/operator/routes">All routes</a></p>
${table('Its link in each worker process', ['State', 'Last error', 'Seen'], links, 'No worker process has reported on this route.')}
<section><h2>Change route ${route.name}</h2>${routeForm(kit.csrf(request), route)}</section>`,
    );
  };

  const attempt = async (request: FastifyRequest, reply: FastifyReply, action: () => Promise<string>, onError: (text: string) => Promise<unknown>) => {
    try {
      const done = await action();
      return seeOther(reply, `/operator/routes?done=${encodeURIComponent(done)}`);
    } catch (err) {
      if (err instanceof AppError && err.status < 500) {
        reply.code(err.status);
        return onError(err.message);
      }
      throw err;
    }
  };

  app.get<{ Querystring: { done?: string } }>('/routes', async (request, reply) =>
    routesPage(request, reply, typeof request.query.done === 'string' ? { text: request.query.done.slice(0, 200), kind: 'ok' } : undefined),
  );
  app.post('/routes', async (request, reply) =>
    attempt(
      request,
      reply,
      async () => {
        const r = await addRoute(acting(ctx, request), field(request.body, 'name').trim(), inputOf(request.body, false));
        return `Route ${r.name} is added; worker processes bind to it within 2 seconds.`;
      },
      (text) => routesPage(request, reply, { text, kind: 'error' }),
    ),
  );
  app.get<{ Params: { name: string } }>('/routes/:name', async (request, reply) => {
    try {
      return await editPage(request, reply, request.params.name);
    } catch (err) {
      if (err instanceof AppError && err.code === 'not_found') {
        reply.code(404);
        return routesPage(request, reply, { text: err.message, kind: 'error' });
      }
      throw err;
    }
  });
  app.post<{ Params: { name: string } }>('/routes/:name', async (request, reply) =>
    attempt(
      request,
      reply,
      async () => {
        const r = await updateRoute(acting(ctx, request), request.params.name, inputOf(request.body, true));
        return `Route ${r.name} is saved; worker processes take it within 2 seconds.`;
      },
      (text) => (reply.statusCode === 404 ? routesPage(request, reply, { text, kind: 'error' }) : editPage(request, reply, request.params.name, { text, kind: 'error' })),
    ),
  );
  app.post<{ Params: { name: string } }>('/routes/:name/remove', async (request, reply) =>
    attempt(
      request,
      reply,
      async () => {
        const r = await removeRoute(acting(ctx, request), request.params.name);
        return `Route ${r.name} is removed.`;
      },
      (text) => routesPage(request, reply, { text, kind: 'error' }),
    ),
  );

  // ---- Margin -------------------------------------------------------------------------------

  app.get<{ Querystring: { from?: string; to?: string } }>('/margin', async (request, reply) => {
    const today = new Date(ctx.clock()).toISOString().slice(0, 10);
    const weekAgo = new Date(ctx.clock() - 6 * DAY_MS).toISOString().slice(0, 10);
    const from = typeof request.query.from === 'string' && request.query.from !== '' ? request.query.from : weekAgo;
    const to = typeof request.query.to === 'string' && request.query.to !== '' ? request.query.to : today;
    let body: Html;
    try {
      const report = await marginReport(ctx, from, to);
      const rows = report.data.map((r) => [r.day, r.route, String(r.messages), String(r.segments), String(r.credits_charged), String(r.carrier_cost), String(r.margin)]);
      if (rows.length > 0) {
        const t = report.totals;
        rows.push([html`<strong>Total</strong>`, '', String(t.messages), String(t.segments), String(t.credits_charged), String(t.carrier_cost), html`<strong id="margin-total">${String(t.margin)}</strong>`] as never);
      }
      body = table(
        `From ${report.from} to ${report.to} (UTC days, both included)`,
        ['Day', 'Route', 'Messages', 'Segments', 'Credits charged', 'Carrier cost', 'Margin'],
        rows,
        'No route took a message in these days.',
      );
    } catch (err) {
      if (!(err instanceof AppError) || err.status >= 500) throw err;
      reply.code(err.status);
      body = alert(err.message);
    }
    return kit.render(
      request,
      reply,
      'Margin',
      'margin',
      html`<form method="get" action="/operator/margin" aria-label="Days of the margin report">
<label for="margin-from">From</label><input id="margin-from" name="from" type="date" value="${from}">
<label for="margin-to">To</label><input id="margin-to" name="to" type="date" value="${to}">
<div class="actions"><button type="submit">Show</button></div></form>
<p>Per day and route: the messages the route took, the credits charged for them, and what the carrier charges (segments × the route's cost per segment when it took each message).</p>
${body}`,
    );
  });

  // ---- One message, with its route ------------------------------------------------------------

  app.get<{ Querystring: { id?: string } }>('/messages', async (request, reply) => {
    const id = typeof request.query.id === 'string' ? request.query.id.trim() : '';
    let body: Html = html``;
    if (id !== '') {
      try {
        const m = await operatorMessage(ctx, id);
        body = table(
          `Message ${m.id}`,
          ['Field', 'Value'],
          [
            ['Account', html`<a href="/operator/accounts?q=${encodeURIComponent(m.account_id)}"><code>${m.account_id}</code></a>`],
            ['To', m.recipient],
            ['From', m.sender],
            ['Status', statusBadge(m.status)],
            ['Segments', String(m.segments)],
            ['Credits charged', String(m.credits)],
            ['Route', m.route ? html`<strong id="message-route">${m.route}</strong>` : html`<span class="muted" id="message-route">none yet</span>`],
            ['Carrier cost', m.route_cost === null ? html`<span class="muted">not recorded</span>` : String(m.route_cost)],
            ['Routes that refused it or did not answer', m.routes_tried_list.join(', ') || html`<span class="muted">none</span>`],
            ['Error', m.error_code ? `${m.error_code}: ${m.error_message ?? ''}` : ''],
            ['Accepted', when(m.created_at)],
            ['Sent', when(m.sent_at)],
            ['Delivered', when(m.delivered_at)],
          ],
          '',
        );
      } catch (err) {
        if (!(err instanceof AppError) || err.status >= 500) throw err;
        reply.code(err.status);
        body = alert(err.message);
      }
    }
    return kit.render(
      request,
      reply,
      'Message',
      'messages',
      html`<form method="get" action="/operator/messages" role="search" aria-label="Find a message">
<label for="message-id">Message ID</label><input id="message-id" type="text" name="id" required maxlength="64" value="${id}">
<div class="actions"><button type="submit">Show</button></div></form>
${body}`,
    );
  });
}
