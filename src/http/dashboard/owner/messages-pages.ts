/**
 * Messages, /dashboard/messages: the delivery reports, filtered and a page at a time, and one
 * message with its webhook events and attempts, and its redaction (DECISIONS.md §13).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { acting } from '../../acting.ts';
import { isFinal, MESSAGE_STATUSES, type MessageStatus } from '../../../domain/message-status.ts';
import { chargedCredits } from '../../../domain/rate-card.ts';
import { isMasked } from '../../../domain/redaction.ts';
import { AppError } from '../../../errors/catalogue.ts';
import { redactMessages } from '../../../services/messages/redact-messages.ts';
import { listDeliveryReports, messageDetail } from '../../../services/messages/reports.ts';
import { html, raw } from '../../html.ts';
import { alert, csrfField, page, statusBadge, table, when } from '../layout.ts';
import { pageNumber, PAGE_SIZE, state, type OwnerArea } from './owner-area.ts';

export function messagePages(app: FastifyInstance, { ctx, render }: OwnerArea): void {
  app.get<{ Querystring: Record<string, string | undefined> }>('/messages', async (request, reply) => {
    const { account } = state(request);
    // A key given twice arrives as an array; the first value counts, as in the API.
    const q = Object.fromEntries(Object.entries(request.query).map(([k, v]) => [k, Array.isArray(v) ? v[0] : v])) as Record<string, string | undefined>;
    const status = MESSAGE_STATUSES.includes(q.status as MessageStatus) ? (q.status as MessageStatus) : undefined;
    const messageId = q.message_id?.trim() || undefined;
    const batchId = q.batch_id?.trim() || undefined;
    const pageNo = pageNumber(q.page);
    const { rows, total } = await listDeliveryReports(ctx, { accountId: account.id, messageId, batchId, status }, pageNo, PAGE_SIZE);
    const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
    const link = (p: number) => {
      const params = new URLSearchParams();
      if (messageId) params.set('message_id', messageId);
      if (batchId) params.set('batch_id', batchId);
      if (status) params.set('status', status);
      params.set('page', String(p));
      return `/dashboard/messages?${params}`;
    };
    const tableRows = rows.map((m) => [
      html`<a href="/dashboard/messages/${m.id}"><code>${m.id}</code></a>`,
      isMasked(m.recipient) ? html`${m.recipient} <span class="badge badge-redacted">redacted</span>` : m.recipient,
      m.sender,
      statusBadge(m.status),
      m.segments,
      when(m.created_at),
      m.error_code ? html`<code>${m.error_code}</code>` : html`<span class="muted">–</span>`,
    ]);
    return render(
      request,
      reply,
      'Messages',
      'messages',
      html`<section><form method="get" action="/dashboard/messages" class="filters" role="search" aria-label="Filter messages">
<div><label for="f-message">Message ID</label><input id="f-message" name="message_id" type="text" value="${messageId ?? ''}"></div>
<div><label for="f-batch">Batch ID</label><input id="f-batch" name="batch_id" type="text" value="${batchId ?? ''}"></div>
<div><label for="f-status">Status</label><select id="f-status" name="status"><option value="">Any</option>${MESSAGE_STATUSES.map(
        (s) => html`<option value="${s}"${s === status ? raw(' selected') : ''}>${s}</option>`,
      )}</select></div>
<div class="actions"><button type="submit" class="secondary">Filter</button></div></form></section>
${table(`Delivery reports (${total})`, ['Message', 'To', 'From', 'Status', 'Segments', 'Created', 'Error'], tableRows, 'No messages match.')}
<nav class="pagination" aria-label="Pages">${pageNo > 1 ? html`<a href="${link(pageNo - 1)}" rel="prev">Previous</a>` : ''}<span>Page ${pageNo} of ${pages}</span>${
        pageNo < pages ? html`<a href="${link(pageNo + 1)}" rel="next">Next</a>` : ''
      }</nav>`,
    );
  });

  const detailPage = async (request: FastifyRequest, reply: FastifyReply, id: string, notice?: { text: string; kind: 'ok' | 'error' }) => {
    const { account, session } = state(request);
    const { message: m, events } = await messageDetail(ctx, account.id, id);
    // What redact-messages.ts leaves: no text and a masked number.
    const redacted = m.body === '' && isMasked(m.recipient);
    const bodyPurged = !redacted && m.body === '';
    const redaction = bodyPurged
      ? html`<p id="redaction" class="muted">The text was removed after this account's retention period (Settings → Data retention).</p>`
      : redacted
      ? html`<p id="redaction" class="muted">Redacted: the text is removed and the number masked, here, in the reports and in the stored webhook events.</p>`
      : isFinal(m.status)
        ? html`<form id="redaction" method="post" action="/dashboard/messages/${m.id}/redact" class="inline" data-confirm="Remove the text of this message and mask its number? This cannot be undone.">${csrfField(session.csrf_token)}<button type="submit" class="danger">Redact</button> <span class="muted">Removes the text and masks the number (last four digits as XXXX), for good.</span></form>`
        : html`<p id="redaction" class="muted">It can be redacted once it is delivered, failed or canceled.</p>`;
    const attempts = events.flatMap(({ event, attempts: list }) =>
      list.map((a) => [
        html`<code>${event.event}</code>`,
        a.attempt,
        when(a.attempted_at),
        a.http_status ?? html`<span class="muted">–</span>`,
        a.error ?? '',
        `${a.latency_ms} ms`,
      ]),
    );
    const eventRows = events.map(({ event }) => [html`<code>${event.event}</code>`, event.url, statusBadge(event.status), event.attempts, event.last_error ?? '']);
    return render(
      request,
      reply,
      `Message ${m.id}`,
      'messages',
      html`${alert(notice?.text, notice?.kind)}<section><dl class="detail">
<dt>Status</dt><dd id="message-status">${statusBadge(m.status)}</dd>
<dt>To</dt><dd>${m.recipient}</dd><dt>From</dt><dd>${m.sender}</dd>
<dt>Segments</dt><dd>${m.segments} (${m.encoding})</dd>
<dt>Credits</dt><dd id="message-credits">${chargedCredits(m)}</dd>
<dt>Batch</dt><dd>${m.batch_id ?? '–'}</dd>
<dt>Created</dt><dd>${when(m.created_at)}</dd><dt>Sent</dt><dd>${when(m.sent_at)}</dd><dt>Delivered</dt><dd>${when(m.delivered_at)}</dd>
${m.error_code ? html`<dt>Error</dt><dd><code>${m.error_code}</code> ${m.error_message ?? ''}</dd>` : ''}
<dt>Callback URL</dt><dd>${m.callback_url ?? '–'}</dd></dl>${redaction}</section>
${table('Webhook events', ['Event', 'URL', 'Status', 'Attempts', 'Last error'], eventRows, 'No webhook events (the message has no callback URL, or nothing has happened yet).')}
${attempts.length > 0 ? table('Webhook attempts', ['Event', 'Attempt', 'At', 'HTTP status', 'Error', 'Latency'], attempts, '') : ''}
<p><a href="/dashboard/messages">All messages</a></p>`,
    );
  };

  app.get<{ Params: { id: string } }>('/messages/:id', async (request, reply) => detailPage(request, reply, request.params.id));

  app.post<{ Params: { id: string } }>('/messages/:id/redact', async (request, reply) => {
    try {
      await redactMessages(acting(ctx, request), state(request).account.id, { messageId: request.params.id });
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'not_redactable') throw err;
      reply.code(err.status);
      return detailPage(request, reply, request.params.id, { text: err.message, kind: 'error' });
    }
    return detailPage(request, reply, request.params.id, { text: 'The message is redacted.', kind: 'ok' });
  });
}
