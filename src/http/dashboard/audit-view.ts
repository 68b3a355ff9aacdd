/**
 * The audit log as both areas show it: the filter form, a page of records, and the CSV download
 * of everything the filter matches (at most AUDIT_CSV_MAX rows, newest first). The owner's page
 * shows the account's records; the operator's, every account's.
 */
import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { AUDIT_CSV_HEADER, auditCsvRow, type AuditEvent } from '../../domain/audit.ts';
import { csvLine } from '../../domain/csv-cell.ts';
import { AppError } from '../../errors/catalogue.ts';
import { allAuditEvents, auditEventsPage, KNOWN_ACTIONS, type AuditQuery } from '../../services/audit/audit.ts';
import type { Context } from '../../services/context.ts';
import { html, type Html } from '../html.ts';
import { alert, table } from './layout.ts';

export const AUDIT_PAGE_SIZE = 50;
export const AUDIT_CSV_MAX = 100_000;

export interface AuditFilterInput {
  action?: string | undefined;
  since?: string | undefined;
  account?: string | undefined;
  page?: string | undefined;
}

function changesText(e: AuditEvent): string {
  return Object.entries(e.changes)
    .map(([field, [before, after]]) => `${field}: ${JSON.stringify(before)} → ${JSON.stringify(after)}`)
    .join('; ');
}

function query(input: AuditFilterInput, accountId: string | undefined): AuditQuery {
  return { accountId: accountId ?? (input.account?.trim() || undefined), action: input.action?.trim() || undefined, since: input.since?.trim() || undefined };
}

/** The filter form, a page of records and the pager; a bad filter is shown as an error above the form. */
export async function auditSection(ctx: Context, base: string, input: AuditFilterInput, accountId?: string): Promise<Html> {
  const pageNo = typeof input.page === 'string' && /^\d{1,6}$/.test(input.page) ? Math.max(1, Number(input.page)) : 1;
  const q = query(input, accountId);
  let error: string | null = null;
  let result: Awaited<ReturnType<typeof auditEventsPage>> = { data: [], pagination: { page: pageNo, limit: AUDIT_PAGE_SIZE, total: 0 } };
  try {
    result = await auditEventsPage(ctx, q, pageNo, AUDIT_PAGE_SIZE);
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== 'invalid_request') throw err;
    error = err.message;
  }
  const params = new URLSearchParams();
  if (q.action) params.set('action', q.action);
  if (q.since) params.set('since', q.since);
  if (!accountId && q.accountId) params.set('account', q.accountId);
  const pages = Math.max(1, Math.ceil(result.pagination.total / AUDIT_PAGE_SIZE));
  const link = (p: number) => `${base}?${new URLSearchParams([...params, ['page', String(p)]]).toString()}`;
  const rows = result.data.map((e) => [
    html`<time datetime="${e.at}">${e.at.slice(0, 19).replace('T', ' ')} UTC</time>`,
    html`${e.actor.type}${e.actor.email ? html` <span class="muted">${e.actor.email}</span>` : ''}${!e.actor.email && e.actor.id ? html` <code>${e.actor.id}</code>` : ''}`,
    html`<code>${e.action}</code>`,
    e.target ? html`${e.target.type} <code>${e.target.id}</code>` : '',
    ...(accountId ? [] : [e.account_id ? html`<code>${e.account_id}</code>` : '']),
    e.ip ?? '',
    changesText(e),
  ]);
  const headers = ['When', 'Who', 'Action', 'Target', ...(accountId ? [] : ['Account']), 'Address', 'Changes'];
  return html`${alert(error)}<form method="get" action="${base}" class="filters" aria-label="Filter the audit log">
<label for="audit-action">Action</label><input id="audit-action" name="action" list="audit-actions" value="${q.action ?? ''}" maxlength="64" placeholder="api_key.created or api_key">
<datalist id="audit-actions">${KNOWN_ACTIONS.map((a) => html`<option value="${a}">`)}</datalist>
<label for="audit-since">Since</label><input id="audit-since" name="since" value="${q.since ?? ''}" maxlength="40" placeholder="2026-11-28">
${accountId ? '' : html`<label for="audit-account">Account</label><input id="audit-account" name="account" value="${q.accountId ?? ''}" maxlength="64">`}
<div class="actions"><button type="submit">Filter</button> <a href="${base}.csv?${params.toString()}" download id="audit-csv">Download CSV</a></div></form>
<p id="audit-total">${result.pagination.total} record${result.pagination.total === 1 ? '' : 's'}.</p>
${table('Audit log, newest first', headers, rows, 'No records match.')}
<nav class="pagination" aria-label="Pages of the audit log">${pageNo > 1 ? html`<a href="${link(pageNo - 1)}" rel="prev">Previous</a>` : ''}<span>Page ${pageNo} of ${pages}</span>${pageNo < pages ? html`<a href="${link(pageNo + 1)}" rel="next">Next</a>` : ''}</nav>`;
}

/** Streams the CSV of every record the filter matches; a bad filter is a 400 page. */
export async function sendAuditCsv(ctx: Context, reply: FastifyReply, input: AuditFilterInput, accountId?: string): Promise<FastifyReply> {
  const q = query(input, accountId);
  const records = allAuditEvents(ctx, q, AUDIT_CSV_MAX);
  // Validates the filter before the first byte goes out, so a bad one is still an error page.
  const first = await records.next();
  async function* lines() {
    yield csvLine(AUDIT_CSV_HEADER);
    if (!first.done) yield csvLine(auditCsvRow(first.value));
    for await (const e of records) yield csvLine(auditCsvRow(e));
  }
  const stamp = new Date(ctx.clock()).toISOString().slice(0, 10);
  return reply
    .type('text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="audit-log-${stamp}.csv"`)
    .send(Readable.from(lines()));
}
