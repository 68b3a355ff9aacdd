/**
 * Credits, /dashboard/credits: the balance and the ledger, a page at a time.
 */
import type { FastifyInstance } from 'fastify';
import { listCreditLedger } from '../../../services/messages/reports.ts';
import { html } from '../../html.ts';
import { page, table, when } from '../layout.ts';
import { pageNumber, PAGE_SIZE, state, type OwnerArea } from './owner-area.ts';

export function creditPages(app: FastifyInstance, { ctx, render }: OwnerArea): void {
  app.get<{ Querystring: { page?: string } }>('/credits', async (request, reply) => {
    const { account } = state(request);
    const pageNo = pageNumber(request.query.page);
    const rows = await listCreditLedger(ctx, account.id, pageNo, PAGE_SIZE + 1);
    const more = rows.length > PAGE_SIZE;
    const ledgerRows = rows.slice(0, PAGE_SIZE).map((r) => [
      when(r.created_at),
      r.kind,
      html`<span class="${Number(r.amount) < 0 ? 'check-bad' : 'check-ok'}">${Number(r.amount) > 0 ? '+' : ''}${Number(r.amount)}</span>`,
      r.reference ? html`<code>${r.reference}</code>` : '',
      r.note ?? '',
    ]);
    return render(
      request,
      reply,
      'Credits',
      'credits',
      html`<div class="stats"><div class="stat"><span>Balance</span><strong id="credits-balance">${Number(account.credits).toLocaleString('en')}</strong><span class="muted">One credit per message segment. Top-ups are made by the operator.</span></div></div>
${table('Ledger', ['When', 'Kind', 'Amount', 'Reference', 'Note'], ledgerRows, 'No ledger entries yet.')}
<nav class="pagination" aria-label="Pages">${pageNo > 1 ? html`<a href="/dashboard/credits?page=${pageNo - 1}" rel="prev">Newer</a>` : ''}${
        more ? html`<a href="/dashboard/credits?page=${pageNo + 1}" rel="next">Older</a>` : ''
      }</nav>`,
    );
  });
}
