/**
 * The operator's area, under /operator: login, the review queue of pending Sender IDs with their
 * documents (approve, reject with a reason, ask for more information), a page at a time, accounts
 * (search, top-up, suspend and resume, limits), the dispatch backlog per account, rate cards and
 * the mail outbox.
 */
import { operatorNumbersPages } from './operator-numbers-pages.ts';
import { operatorVerifyPages } from './operator-verify-pages.ts';
import { acting } from '../acting.ts';
import { operatorAccessHook, operatorMay, operatorRoutePermission } from './operator-access.ts';
import { auditSection, sendAuditCsv, type AuditFilterInput } from './audit-view.ts';
import { operatorRoutesPages } from './operator-routes-pages.ts';
import { operatorRateCardsPages } from './operator-rate-cards-pages.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../errors/catalogue.ts';
import { addCredits, listAccounts, setAccountStatus } from '../../services/accounts/accounts.ts';
import { getAccountLimits, setAccountLimits, type LimitsChange } from '../../services/accounts/account-limits.ts';
import type { Context } from '../../services/context.ts';
import { getSenderIdDocument, listSenderIdDocuments } from '../../services/sender-ids/documents.ts';
import { listOutbox } from '../../services/mail/mail.ts';
import { backlogOverview } from '../../services/messages/backlog.ts';
import type { Operator } from '../../services/auth/operators.ts';
import { getOperator, logInOperator } from '../../services/auth/owners.ts';
import { approveSenderId, rejectSenderId, requestSenderIdInfo, reviewQueuePage } from '../../services/sender-ids/sender-ids.ts';
import { endSession, type Session } from '../../services/auth/sessions.ts';
import { listSmppUsers } from '../../services/smpp-access/smpp-users.ts';
import { describeDays, getAccountRetention, setAccountRetention, type RetentionChange } from '../../services/retention/account-retention.ts';
import { listErasures } from '../../services/retention/erasures.ts';
import { html, type Html } from '../html.ts';
import { alert, csrfField, formatBytes, page, statusBadge, table, when } from './layout.ts';
import { sendDocument } from './send-document.ts';
import { clearSessionCookie, field, loginHandler, preLoginToken, seeOther, sessionGuard } from './session-guard.ts';
import { operatorSecurityPages } from './operator-security-pages.ts';

declare module 'fastify' {
  interface FastifyRequest {
    operator?: { session: Session; operator: Operator };
  }
}

/** The dispatch backlog page lists this many largest backlogs and this many waiting longest. */
const BACKLOG_ACCOUNTS_SHOWN = 50;

/** Sender IDs per page of the review queue. */
const QUEUE_PAGE_SIZE = 25;

function pageNumber(raw: unknown): number {
  const n = typeof raw === 'string' && /^\d{1,6}$/.test(raw) ? Number(raw) : 1;
  return Math.max(1, n);
}

function state(request: FastifyRequest): { session: Session; operator: Operator } {
  if (!request.operator) throw new Error('operator page reached without a session');
  return request.operator;
}

/** Whether the console's navigation shows a page to this operator: only those their role opens. */
function navAllowed(request: FastifyRequest, href: string): boolean {
  const needed = operatorRoutePermission('GET', href);
  return needed === 'public' || (needed !== undefined && operatorMay(request, needed));
}

export function operatorPages(ctx: Context) {
  return async (app: FastifyInstance) => {
    app.decorateRequest('operator', undefined);

    app.addHook(
      'preHandler',
      sessionGuard(ctx, 'operator', (id) => getOperator(ctx, id), (request, session, operator) => {
        request.operator = { session, operator };
      }),
    );
    // After the session guard: the role's check of every page and form (operator-access.ts).
    app.addHook('preHandler', operatorAccessHook(ctx));

    const render = (request: FastifyRequest, reply: FastifyReply, title: string, current: string, body: Html) => {
      const s = state(request);
      return reply.type('text/html; charset=utf-8').send(page({ title, area: 'operator', current, session: { csrf: s.session.csrf_token, who: `${s.operator.email} (${s.operator.role})`, shows: (href) => navAllowed(request, href) }, body }));
    };

    const loginPage = (token: string, error?: string, email = '') =>
      page({
        title: 'Operator login',
        area: 'operator',
        body: html`<section class="narrow">${alert(error)}
<form method="post" action="/operator/login">${csrfField(token)}
<label for="email">E-mail</label><input id="email" name="email" type="email" autocomplete="username" required value="${email}">
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<div class="actions"><button type="submit">Log in</button></div></form>
<p class="hint">Operator logins are made on the server with <code>pigeon operator create</code>.</p></section>`,
      });

    app.get('/login', { config: { public: true } }, async (request, reply) =>
      reply.type('text/html; charset=utf-8').send(loginPage(preLoginToken(ctx, request, reply))),
    );

    app.post('/login', { config: { public: true } }, loginHandler(ctx, 'operator', (email, password, ip) => logInOperator(ctx, email, password, ip), '/operator/', loginPage));

    app.post('/logout', async (request, reply) => {
      await endSession(ctx, state(request).session.id);
      clearSessionCookie(ctx, reply, 'operator');
      return seeOther(reply, '/operator/login');
    });

    // The home page is the first the operator's role may open: a finance operator has no review queue.
    app.get('/', async (request, reply) => seeOther(reply, operatorMay(request, 'sender_ids.review') ? '/operator/sender-ids' : '/operator/accounts'));

    app.get<{ Querystring: AuditFilterInput }>('/audit', async (request, reply) =>
      render(request, reply, 'Audit log', 'audit', await auditSection(ctx, '/operator/audit', request.query)),
    );
    app.get<{ Querystring: AuditFilterInput }>('/audit.csv', async (request, reply) => sendAuditCsv(ctx, reply, request.query));

    operatorSecurityPages(app, ctx, state, render);

    // ---- Review queue -----------------------------------------------------------------------

    app.get<{ Querystring: { done?: string; page?: string } }>('/sender-ids', async (request, reply) => {
      const csrf = state(request).session.csrf_token;
      // Oldest first: the queue is worked through in the order requests arrived.
      const pageNo = pageNumber(request.query.page);
      const { items: pending, total, accounts } = await reviewQueuePage(ctx, pageNo, QUEUE_PAGE_SIZE);
      const pages = Math.max(1, Math.ceil(total / QUEUE_PAGE_SIZE));
      const pageField = html`<input type="hidden" name="page" value="${pageNo}">`;
      const docs = await listSenderIdDocuments(ctx, pending.map((s) => s.id));
      const items = pending.map((s) => {
        const account = accounts.get(s.account_id);
        const files = docs.get(s.id) ?? [];
        return html`<section class="card review" id="review-${s.id}" aria-labelledby="title-${s.id}">
<h2 id="title-${s.id}">${s.name} ${statusBadge(s.status)}</h2>
<p>Account <strong>${account?.name ?? s.account_id}</strong> &lt;${account?.email ?? ''}&gt; · <code>${s.account_id}</code> · registered ${when(s.created_at)}</p>
${s.review_note ? html`<p><strong>Information requested:</strong> ${s.review_note}</p>` : ''}
<p><strong>Documents:</strong> ${
          files.length === 0
            ? html`<span class="muted">none</span>`
            : files.map((d) => html`<a href="/operator/documents/${d.id}">${d.filename}</a> <span class="muted">(${d.content_type}, ${formatBytes(Number(d.size))})</span> `)
        }</p>
<div class="actions">
<form method="post" action="/operator/sender-ids/${s.id}/approve">${csrfField(csrf)}${pageField}<button type="submit" aria-label="Approve ${s.name}">Approve</button></form>
<form method="post" action="/operator/sender-ids/${s.id}/reject">${csrfField(csrf)}${pageField}
<label for="reason-${s.id}">Reason for rejection</label><input id="reason-${s.id}" name="reason" type="text" required maxlength="500">
<button type="submit" class="danger" aria-label="Reject ${s.name}">Reject</button></form>
<form method="post" action="/operator/sender-ids/${s.id}/request-info">${csrfField(csrf)}${pageField}
<label for="note-${s.id}">Note asking for more information</label><input id="note-${s.id}" name="note" type="text" required maxlength="500">
<button type="submit" class="secondary" aria-label="Request more information about ${s.name}">Request information</button></form>
</div></section>`;
      });
      const done = request.query.done ? alert(request.query.done, 'ok') : html``;
      return render(
        request,
        reply,
        'Review queue',
        'review',
        html`${done}<p id="queue-total">${total} Sender ID${total === 1 ? '' : 's'} waiting for review.</p>${
          items.length === 0 ? html`<p class="muted">No Sender IDs are waiting for review${pageNo > 1 ? ' on this page' : ''}.</p>` : items
        }
<nav class="pagination" aria-label="Pages of the review queue">${pageNo > 1 ? html`<a href="/operator/sender-ids?page=${pageNo - 1}" rel="prev">Previous</a>` : ''}<span>Page ${pageNo} of ${pages}</span>${
          pageNo < pages ? html`<a href="/operator/sender-ids?page=${pageNo + 1}" rel="next">Next</a>` : ''
        }</nav>`,
      );
    });

    /** Back to the page of the queue the decision was made on. */
    const decided = (reply: FastifyReply, body: unknown, text: string) => {
      const pageNo = pageNumber(field(body, 'page'));
      return seeOther(reply, `/operator/sender-ids?${pageNo > 1 ? `page=${pageNo}&` : ''}done=${encodeURIComponent(text)}`);
    };

    app.post<{ Params: { id: string } }>('/sender-ids/:id/approve', async (request, reply) => {
      const s = await approveSenderId(acting(ctx, request), request.params.id);
      return decided(reply, request.body, `${s.name} approved; the owner is told by e-mail.`);
    });
    app.post<{ Params: { id: string } }>('/sender-ids/:id/reject', async (request, reply) => {
      const s = await rejectSenderId(acting(ctx, request), request.params.id, field(request.body, 'reason'));
      return decided(reply, request.body, `${s.name} rejected; the owner is told by e-mail.`);
    });
    app.post<{ Params: { id: string } }>('/sender-ids/:id/request-info', async (request, reply) => {
      const s = await requestSenderIdInfo(acting(ctx, request), request.params.id, field(request.body, 'note'));
      return decided(reply, request.body, `More information about ${s.name} requested by e-mail.`);
    });

    app.get<{ Params: { id: string } }>('/documents/:id', async (request, reply) => sendDocument(reply, await getSenderIdDocument(ctx, request.params.id)));

    // ---- Accounts ---------------------------------------------------------------------------

    app.get<{ Querystring: { q?: string; done?: string } }>('/accounts', async (request, reply) => {
      const csrf = state(request).session.csrf_token;
      const q = typeof request.query.q === 'string' ? request.query.q.trim() : '';
      const accounts = (await listAccounts(ctx, q ? { search: q } : {})).slice(0, 100);
      const back = `/operator/accounts${q ? `?q=${encodeURIComponent(q)}` : ''}`;
      const rows = accounts.map((a) => [
        html`<strong>${a.name}</strong><br><code>${a.id}</code><br><a href="/operator/accounts/${a.id}/limits" aria-label="Limits of ${a.name}">Limits</a>`,
        a.email,
        statusBadge(a.status),
        html`<span id="credits-${a.id}">${Number(a.credits).toLocaleString('en')}</span>`,
        html`<form method="post" action="/operator/accounts/${a.id}/credits" class="topup">${csrfField(csrf)}<input type="hidden" name="back" value="${back}">
<label for="amount-${a.id}">Credits to add</label><input id="amount-${a.id}" name="amount" type="number" min="1" step="1" required inputmode="numeric">
<button type="submit" class="secondary" aria-label="Top up ${a.name}">Top up</button></form>`,
        html`<form method="post" action="/operator/accounts/${a.id}/${a.status === 'active' ? 'suspend' : 'resume'}"${
          a.status === 'active' ? html` data-confirm="Suspend ${a.name}? Its API keys stop working at once."` : ''
        }>${csrfField(csrf)}<input type="hidden" name="back" value="${back}"><button type="submit" class="${a.status === 'active' ? 'danger' : 'secondary'}" aria-label="${a.status === 'active' ? 'Suspend' : 'Resume'} ${a.name}">${a.status === 'active' ? 'Suspend' : 'Resume'}</button></form>`,
      ]);
      return render(
        request,
        reply,
        'Accounts',
        'accounts',
        html`${request.query.done ? alert(request.query.done, 'ok') : ''}
<section><form method="get" action="/operator/accounts" role="search" aria-label="Search accounts">
<label for="q">Search by name, e-mail or account ID</label><input id="q" name="q" type="search" value="${q}">
<div class="actions"><button type="submit" class="secondary">Search</button></div></form></section>
${table(`Accounts${q ? ` matching “${q}”` : ''}`, ['Account', 'E-mail', 'Status', 'Credits', 'Top-up', 'Access'], rows, 'No accounts match.')}`,
      );
    });

    /** Back to the list the form was posted from (only local account-list URLs). */
    const backTo = (body: unknown, done: string) => {
      const back = field(body, 'back');
      const base = /^\/operator\/accounts(\?q=[^#]*)?$/.test(back) ? back : '/operator/accounts';
      return `${base}${base.includes('?') ? '&' : '?'}done=${encodeURIComponent(done)}`;
    };

    app.post<{ Params: { id: string } }>('/accounts/:id/credits', async (request, reply) => {
      const raw = field(request.body, 'amount').trim();
      if (!/^\d{1,12}$/.test(raw)) throw new AppError('invalid_request', 'The amount must be a whole number above 0.');
      const balance = await addCredits(acting(ctx, request), request.params.id, Number(raw), `dashboard top-up by ${state(request).operator.email}`);
      return seeOther(reply, backTo(request.body, `Added ${raw} credits; the balance is ${balance}.`));
    });
    app.post<{ Params: { id: string } }>('/accounts/:id/suspend', async (request, reply) => {
      const a = await setAccountStatus(acting(ctx, request), request.params.id, 'suspended');
      return seeOther(reply, backTo(request.body, `${a.name} is suspended.`));
    });
    app.post<{ Params: { id: string } }>('/accounts/:id/resume', async (request, reply) => {
      const a = await setAccountStatus(acting(ctx, request), request.params.id, 'active');
      return seeOther(reply, backTo(request.body, `${a.name} is active again.`));
    });

    // ---- Limits of one account --------------------------------------------------------------

    app.get<{ Params: { id: string }; Querystring: { done?: string } }>('/accounts/:id/limits', async (request, reply) => {
      const csrf = state(request).session.csrf_token;
      const v = await getAccountLimits(ctx, request.params.id);
      const installation = v.installation_countries === null ? 'every country' : v.installation_countries.map((c) => `+${c}`).join(', ');
      const dflt = (overridden: boolean) => (overridden ? '' : html` <span class="muted">(installation default)</span>`);
      const rows = [
        ['Pending Sender IDs', html`<span id="usage-pending">${v.usage.pending_sender_ids} of ${v.limits.pending_sender_ids}</span>${dflt(v.overridden.pending_sender_ids)}`],
        ['Verification documents', html`<span id="usage-documents">${formatBytes(v.usage.document_bytes)} of ${formatBytes(v.limits.document_bytes)}</span>${dflt(v.overridden.document_bytes)}`],
        ['Messages per UTC day', html`<span id="usage-daily">${v.limits.daily_messages === null ? 'no cap' : `${v.usage.messages_today} sent today of ${v.limits.daily_messages}`}</span>`],
        ['Destinations', html`<span id="usage-countries">${v.limits.countries === null ? `all the installation allows (${installation})` : `${v.limits.countries.map((c) => `+${c}`).join(', ')} (within ${installation})`}</span>`],
      ];
      return render(
        request,
        reply,
        'Account limits',
        'accounts',
        html`${request.query.done ? alert(request.query.done, 'ok') : ''}
<p>Account <code>${v.id}</code>, made by ${v.origin === 'signup' ? 'dashboard sign-up' : 'the operator'}. <a href="/operator/accounts?q=${encodeURIComponent(v.id)}">Back to the account</a></p>
${table('Limits and what is used', ['Limit', 'Now'], rows, '')}
<section><h2>Change</h2>
<form method="post" action="/operator/accounts/${v.id}/limits">${csrfField(csrf)}
<label for="pending">Pending Sender IDs at once</label><input id="pending" name="pending_sender_ids" type="number" min="0" step="1" required inputmode="numeric" value="${v.limits.pending_sender_ids}">
<label for="documents">Document storage, bytes</label><input id="documents" name="document_bytes" type="number" min="0" step="1" required inputmode="numeric" value="${v.limits.document_bytes}">
<label for="daily">Messages per UTC day</label><input id="daily" name="daily_messages" type="number" min="0" step="1" inputmode="numeric" value="${v.limits.daily_messages ?? ''}" aria-describedby="daily-hint">
<p class="hint" id="daily-hint">Empty: no daily cap.</p>
<label for="countries">Destinations (calling codes)</label><input id="countries" name="countries" type="text" maxlength="400" placeholder="e.g. 44,33" value="${v.limits.countries?.join(',') ?? ''}" aria-describedby="countries-hint">
<p class="hint" id="countries-hint">Comma-separated calling codes; empty: every country the installation allows (${installation}).</p>
<div class="actions"><button type="submit">Save limits</button></div></form></section>
${await retentionSection(v.id, csrf)}`,
      );
    });

    /** The account's retention (DECISIONS.md §13): what applies, and the form that shortens it. */
    const retentionSection = async (accountId: string, csrf: string): Promise<Html> => {
      const r = await getAccountRetention(ctx, accountId);
      const own = (set: boolean, value: number | null) => (set ? String(value ?? '') : '');
      const row = (id: string, name: string, label: string, value: number | null, set: boolean, installation: number | null) =>
        html`<label for="${id}">${label}</label><input id="${id}" name="${name}" type="number" min="0" step="1" inputmode="numeric" max="${installation ?? ''}" value="${own(set, value)}" aria-describedby="${id}-hint">
<p class="hint" id="${id}-hint">Now: <span id="${id}-now">${describeDays(value)}</span>${set ? '' : ' (installation default)'}. Empty: the installation's ${describeDays(installation)}; at most that.</p>`;
      return html`<section><h2 id="retention">Data retention</h2>
<p>How long this account's messages are kept (docs/privacy.md). An account can be set shorter than the installation, never longer; 0 removes everything at the next purge.</p>
<form method="post" action="/operator/accounts/${accountId}/retention">${csrfField(csrf)}
${row('body-days', 'body_days', 'Message text, days', r.retention.body_days, r.overridden.body_days, r.installation.body_days)}
${row('message-days', 'message_days', 'Whole messages, days', r.retention.message_days, r.overridden.message_days, r.installation.message_days)}
${row('mask-days', 'mask_numbers_days', 'Numbers masked after, days', r.retention.mask_numbers_days, r.overridden.mask_numbers_days, r.installation.mask_numbers_days)}
<div class="actions"><button type="submit">Save retention</button></div></form></section>`;
    };

    app.post<{ Params: { id: string } }>('/accounts/:id/retention', async (request, reply) => {
      const days = (name: string, label: string): number | null => {
        const raw = field(request.body, name).trim();
        if (raw === '') return null;
        if (!/^\d{1,6}$/.test(raw)) throw new AppError('invalid_request', `${label} must be a whole number of days, 0 or more, or empty for the installation's default.`);
        return Number(raw);
      };
      const change: RetentionChange = { bodyDays: days('body_days', 'Message text'), messageDays: days('message_days', 'Whole messages'), maskNumbersDays: days('mask_numbers_days', 'Numbers masked after') };
      const v = await setAccountRetention(acting(ctx, request), request.params.id, change);
      return seeOther(reply, `/operator/accounts/${v.id}/limits?done=${encodeURIComponent('The retention was saved; it applies from the next purge.')}`);
    });

    // ---- Erasures -----------------------------------------------------------------------------

    app.get('/erasures', async (request, reply) => {
      const rows = (await listErasures(ctx, 200)).map((e) => [
        html`<code>${e.id}</code>`,
        e.account_id === null ? html`<em>every account</em>` : html`<code>${e.account_id}</code>`,
        html`<code>${e.phone}</code>`,
        e.requested_by === 'api' ? 'the account (API)' : 'the operator',
        statusBadge(e.status),
        `${e.counts.messages} messages, ${e.counts.inbound_messages} inbound, ${e.counts.events} events, ${e.counts.idempotent_responses} stored responses`,
        e.created_at,
        e.finished_at ?? '–',
      ]);
      return render(
        request,
        reply,
        'Erasures',
        'erasures',
        html`<p>Phone numbers erased at an account's request (<code>POST /v1/privacy/erasures</code>) or the operator's (<code>pigeon privacy erase</code>). The number is kept masked only.</p>
${table('Erasures, newest first', ['Erasure', 'Account', 'Number', 'Asked by', 'Status', 'Redacted', 'Asked', 'Done'], rows, 'No erasures yet.')}`,
      );
    });

    app.post<{ Params: { id: string } }>('/accounts/:id/limits', async (request, reply) => {
      const number = (name: string, label: string, optional: boolean): number | null => {
        const raw = field(request.body, name).trim();
        if (raw === '' && optional) return null;
        if (!/^\d{1,15}$/.test(raw)) throw new AppError('invalid_request', `${label} must be a whole number, 0 or more.`);
        return Number(raw);
      };
      const pending = number('pending_sender_ids', 'Pending Sender IDs', false)!;
      const documents = number('document_bytes', 'Document storage', false)!;
      const change: LimitsChange = { dailyMessages: number('daily_messages', 'Messages per day', true), countries: field(request.body, 'countries').trim() || null };
      // A quota left as shown keeps following the installation's default.
      const current = await getAccountLimits(ctx, request.params.id);
      if (pending !== current.limits.pending_sender_ids) change.pendingSenderIds = pending;
      if (documents !== current.limits.document_bytes) change.documentBytes = documents;
      const v = await setAccountLimits(acting(ctx, request), request.params.id, change);
      return seeOther(reply, `/operator/accounts/${v.id}/limits?done=${encodeURIComponent('The limits were saved; they apply from the next request.')}`);
    });

    // ---- Dispatch backlog --------------------------------------------------------------------

    app.get('/backlog', async (request, reply) => {
      const b = await backlogOverview(ctx, BACKLOG_ACCOUNTS_SHOWN);
      const n = (v: number) => v.toLocaleString('en');
      const age = (s: number) => (s < 1 ? 'under a second' : s < 120 ? `${Math.round(s)} s` : `${Math.round(s / 60)} min`);
      const rows = b.accounts.map((a) => [
        html`<a href="/operator/accounts?q=${encodeURIComponent(a.accountId)}"><code>${a.accountId}</code></a>`,
        n(a.depth),
        `${Math.round((a.depth / b.share) * 100)} %`,
        age(a.oldestAgeSeconds),
      ]);
      const rate = b.drainRate === null ? 'not measured yet (it is measured while sends arrive)' : `${n(Math.round(b.drainRate))} messages/s`;
      return render(
        request,
        reply,
        'Dispatch backlog',
        'backlog',
        html`<p id="backlog-total">${n(b.depth)} messages wait for dispatch (the limit is ${n(b.limit)}; the oldest waits for ${age(b.oldestAgeSeconds)}). Each account may have ${n(b.share)} waiting: a send that would take its account past that gets 429, one that would take the whole backlog past the limit gets 503. Dispatch serves the accounts in turn. Drain rate: ${rate}.</p>${table(
          `Accounts with the most waiting (the ${BACKLOG_ACCOUNTS_SHOWN} largest), and those whose oldest message has waited longest (the ${BACKLOG_ACCOUNTS_SHOWN} oldest)`,
          ['Account', 'Waiting', 'Of its share', 'Oldest waits'],
          rows,
          'Nothing waits for dispatch.',
        )}`,
      );
    });

    operatorNumbersPages(app, ctx, { csrf: (request) => state(request).session.csrf_token, render });
    operatorVerifyPages(app, ctx, { csrf: (request) => state(request).session.csrf_token, render });
    operatorRoutesPages(app, ctx, { csrf: (request) => state(request).session.csrf_token, render });
    operatorRateCardsPages(app, ctx, { csrf: (request) => state(request).session.csrf_token, render });

    // ---- SMPP users and live binds, across accounts ----------------------------------------

    app.get('/smpp', async (request, reply) => {
      const users = await listSmppUsers(ctx);
      const binds = users.flatMap((u) => u.binds.map((b) => ({ ...b, user: u })));
      const bindRows = binds.map((b) => [
        html`<a href="/operator/accounts?q=${encodeURIComponent(b.user.account_id)}"><code>${b.user.account_id}</code></a>`,
        html`<code>${b.user.system_id}</code>`,
        b.type,
        html`<code>${b.address}</code>`,
        when(b.since),
        String(b.submits),
      ]);
      const userRows = users.map((u) => [
        html`<code>${u.account_id}</code>`,
        html`<code>${u.system_id}</code>`,
        String(u.tps),
        `${u.binds.length} of ${u.max_binds}`,
        u.allow.length > 0 ? u.allow.join(', ') : 'any',
        String(u.waiting),
      ]);
      const port = ctx.config.smppServer.port;
      return render(
        request,
        reply,
        'SMPP binds',
        'smpp',
        html`<p>${port === 0 ? 'The SMPP listener is off (SMPP_SERVER_PORT=0).' : html`Customers bind on port <code>${String(port)}</code>. Users are made, rotated and deleted with <code>pigeon smpp-user</code>.`}</p>${table(
          'Live binds, in every process',
          ['Account', 'system_id', 'Type', 'Address', 'Since', 'Submits'],
          bindRows,
          'Nobody is bound.',
        )}${table('SMPP users', ['Account', 'system_id', 'tps', 'Binds', 'Allowed from', 'Waiting for a receiver'], userRows, 'No SMPP users yet.')}`,
      );
    });

    // ---- Mail outbox ------------------------------------------------------------------------

    app.get('/outbox', async (request, reply) => {
      const mails = await listOutbox(ctx, 200);
      const rows = mails.map((m) => [
        when(m.created_at),
        m.to_address,
        html`<details><summary>${m.subject}</summary><pre>${m.body_text}</pre></details>`,
        statusBadge(m.status),
        m.attempts,
        m.last_error ?? '',
      ]);
      const mode = ctx.config.smtpUrl
        ? html`<p>Mail is sent through SMTP (<code>SMTP_URL</code> is set); this list shows what was sent, what waits for a retry and what failed.</p>`
        : html`<p><code>SMTP_URL</code> is not set: mail to owners is kept here (status Held) instead of being sent. Forward it by hand, or set <code>SMTP_URL</code>.</p>`;
      return render(request, reply, 'Mail outbox', 'outbox', html`${mode}${table('Mail, newest first', ['Created', 'To', 'Subject', 'Status', 'Attempts', 'Last error'], rows, 'No mail yet.')}`);
    });
  };
}
