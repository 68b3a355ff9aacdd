/**
 * The owner's Inbox (a conversation per correspondent: what they sent and what was sent to them,
 * newest first, searchable) and Opt-outs (the list, adding, removing with a confirm; a recipient's
 * own STOP shown as not removable). Registered inside the owner area's scope (owner-pages.ts),
 * behind its session guard and CSRF check; calls services only.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { acting } from '../../acting.ts';
import { AppError } from '../../../errors/catalogue.ts';
import type { Context } from '../../../services/context.ts';
import { conversation, inbox } from '../../../services/inbound/inbound.ts';
import { redactInbound } from '../../../services/inbound/redact-inbound.ts';
import { addOptOut, listOptOuts, removeOptOut } from '../../../services/opt-outs/opt-outs.ts';
import { html } from '../../html.ts';
import type { OwnerPageKit } from './events-settings-pages.ts';
import { alert, csrfField, statusBadge, table, when } from '../layout.ts';
import { field, seeOther } from '../session-guard.ts';

const OPT_OUTS_PAGE = 50;

export function twoWayPages(app: FastifyInstance, ctx: Context, kit: Omit<OwnerPageKit, 'tabs'>): void {
  app.get<{ Querystring: { q?: string } }>('/inbox', async (request, reply) => {
    const { account } = kit.account(request);
    const q = typeof request.query.q === 'string' ? request.query.q.trim().slice(0, 100) : '';
    const people = await inbox(ctx, account.id, q || undefined);
    const rows = people.map((p) => [html`<a href="/dashboard/inbox/${encodeURIComponent(p.phone)}">${p.phone}</a>`, when(p.lastAt), p.received]);
    return kit.render(
      request,
      reply,
      'Inbox',
      'inbox',
      html`<section><form method="get" action="/dashboard/inbox" role="search" aria-label="Search the inbox">
<label for="q">Search by number or text</label><input id="q" name="q" type="search" value="${q}" maxlength="100">
<div class="actions"><button type="submit" class="secondary">Search</button></div></form></section>
${table(q ? `Conversations matching “${q}”` : 'Conversations, most recent first', ['Correspondent', 'Last message', 'Received'], rows, q ? 'Nothing matches.' : 'No messages received yet. Messages sent to your numbers appear here.')}`,
    );
  });

  app.get<{ Params: { phone: string } }>('/inbox/:phone', async (request, reply) => {
    const { account, csrf } = kit.account(request);
    const phone = request.params.phone.slice(0, 40);
    const entries = await conversation(ctx, account.id, phone);
    const rows = entries.map((e) => [
      when(e.at),
      e.direction === 'in' ? html`<span class="badge">received</span>` : html`<span class="badge">sent</span> ${statusBadge(e.status ?? '')}`,
      html`<code>${e.ours}</code>`,
      e.text === '' ? html`<span class="muted redacted">Text removed</span>` : e.text,
      e.direction === 'in'
        ? html`<form method="post" action="/dashboard/inbox/${encodeURIComponent(phone)}/${e.id}/redact" class="inline" data-confirm="Remove the text of this message and mask the sender's number? This cannot be undone.">${csrfField(csrf)}<button type="submit" class="danger" aria-label="Redact the message received ${new Date(e.at).toISOString()}">Redact</button></form>`
        : html`<a href="/dashboard/messages/${e.id}">Details</a>`,
    ]);
    return kit.render(
      request,
      reply,
      `Conversation with ${phone}`,
      'inbox',
      html`<p><a href="/dashboard/inbox">Back to the inbox</a></p>
${table(`Conversation with ${phone}, newest first`, ['When', 'Direction', 'Your number or Sender ID', 'Message', ''], rows, 'No messages with this number.')}`,
    );
  });

  app.post<{ Params: { phone: string; id: string } }>('/inbox/:phone/:id/redact', async (request, reply) => {
    const { account } = kit.account(request);
    await redactInbound(acting(ctx, request), account.id, request.params.id);
    // The sender is masked now, so the conversation with the full number no longer holds it.
    return seeOther(reply, `/dashboard/inbox?redacted=${encodeURIComponent(request.params.id)}`);
  });

  const optOutsPage = async (request: FastifyRequest, reply: FastifyReply, message?: { text: string; kind: 'ok' | 'error' }) => {
    const { account, csrf } = kit.account(request);
    const raw = (request.query as Record<string, unknown> | undefined)?.page;
    const page = typeof raw === 'string' && /^\d{1,6}$/.test(raw) ? Math.max(1, Number(raw)) : 1;
    const { rows, total } = await listOptOuts(ctx, account.id, undefined, OPT_OUTS_PAGE, (page - 1) * OPT_OUTS_PAGE);
    const lines = rows.map((o) => [
      o.phone,
      o.source === 'keyword' ? 'replied STOP' : o.source === 'api' ? 'added through the API or here' : 'added by the operator',
      when(Date.parse(o.created_at)),
      o.source === 'keyword'
        ? html`<span class="muted">Only their START lifts it</span>`
        : html`<form method="post" action="/dashboard/opt-outs/remove" data-confirm="Remove ${o.phone} from the opt-out list? Messages to them will be sent again.">${csrfField(csrf)}<input type="hidden" name="phone" value="${o.phone}"><button type="submit" class="danger" aria-label="Remove ${o.phone}">Remove</button></form>`,
    ]);
    const pages = Math.max(1, Math.ceil(total / OPT_OUTS_PAGE));
    return kit.render(
      request,
      reply,
      'Opt-outs',
      'opt-outs',
      html`${message ? alert(message.text, message.kind) : html``}
<p>Recipients on this list get nothing from this account: sends to them are refused, and queued messages to them fail and are refunded. A recipient who replied STOP is listed as such; only their START takes them off.</p>
<section><h2>Add a recipient</h2><form method="post" action="/dashboard/opt-outs">${csrfField(csrf)}
<label for="phone">Phone (E.164)</label><input id="phone" name="phone" required maxlength="32" placeholder="+447911123456">
<div class="actions"><button type="submit">Add</button></div></form></section>
${table(`Opt-outs (${total})`, ['Phone', 'How', 'Since', ''], lines, 'Nobody has opted out.')}
<nav class="pagination" aria-label="Pages">${page > 1 ? html`<a href="/dashboard/opt-outs?page=${page - 1}" rel="prev">Newer</a>` : ''}<span>Page ${page} of ${pages}</span>${
        page < pages ? html`<a href="/dashboard/opt-outs?page=${page + 1}" rel="next">Older</a>` : ''
      }</nav>`,
    );
  };

  const attempt = async (request: FastifyRequest, reply: FastifyReply, action: () => Promise<string>) => {
    try {
      const done = await action();
      return seeOther(reply, `/dashboard/opt-outs?done=${encodeURIComponent(done)}`);
    } catch (err) {
      if (err instanceof AppError && err.status < 500) {
        reply.code(err.status);
        return optOutsPage(request, reply, { text: err.message, kind: 'error' });
      }
      throw err;
    }
  };

  app.get<{ Querystring: { done?: string } }>('/opt-outs', async (request, reply) =>
    optOutsPage(request, reply, typeof request.query.done === 'string' ? { text: request.query.done.slice(0, 200), kind: 'ok' } : undefined),
  );
  app.post('/opt-outs', async (request, reply) =>
    attempt(request, reply, async () => {
      const { optOut, created } = await addOptOut(acting(ctx, request), kit.account(request).account.id, field(request.body, 'phone').trim(), 'api');
      return created ? `${optOut.phone} is opted out.` : `${optOut.phone} was already on the list.`;
    }),
  );
  app.post('/opt-outs/remove', async (request, reply) =>
    attempt(request, reply, async () => {
      const phone = field(request.body, 'phone');
      await removeOptOut(acting(ctx, request), kit.account(request).account.id, phone, 'api');
      return `${phone} is off the list.`;
    }),
  );
}
