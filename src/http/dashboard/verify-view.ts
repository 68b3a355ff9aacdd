/**
 * Verify (DECISIONS.md §14) as both areas show it: per service and country over the last 24 hours,
 * verifications sent, approved and the conversion rate; and the number ranges the fraud guard
 * blocks now, each with an unblock button. The owner's page shows the account's; the operator's,
 * every account's.
 */
import type { Context } from '../../services/context.ts';
import { conversionByServiceAndCountry, listBlocks, listServices } from '../../services/verify/verify.ts';
import { html, type Html } from '../html.ts';
import { csrfField, table } from './layout.ts';

function rate(sent: number, approved: number): string {
  return sent === 0 ? '–' : `${Math.round((approved / sent) * 100)} %`;
}

/** The conversion table and the blocked ranges; `unblockAction` is the form's action URL. */
export async function verifySection(ctx: Context, csrf: string, unblockAction: string, accountId?: string): Promise<Html> {
  const stats = await conversionByServiceAndCountry(ctx, accountId);
  const names = new Map(accountId === undefined ? [] : (await listServices(ctx, accountId)).map((s) => [s.id, s.name] as const));
  const statRows = stats.map((s) => [
    ...(accountId === undefined ? [html`<code>${s.account_id}</code>`] : []),
    names.has(s.service_id) ? html`${names.get(s.service_id)} <code>${s.service_id}</code>` : html`<code>${s.service_id}</code>`,
    s.country ?? 'unknown',
    s.sent.toLocaleString('en'),
    s.approved.toLocaleString('en'),
    rate(s.sent, s.approved),
  ]);
  const blocks = await listBlocks(ctx, accountId);
  const blockRows = blocks.map((b) => [
    ...(accountId === undefined ? [html`<code>${b.account_id}</code>`] : []),
    html`<code>${b.range}</code>xxx`,
    html`${b.blocked_at.slice(0, 16).replace('T', ' ')} UTC`,
    html`${b.blocked_until.slice(0, 16).replace('T', ' ')} UTC`,
    `${b.sent} sent, ${b.approved} approved`,
    html`<form method="post" action="${unblockAction}" data-confirm="Unblock ${b.range}xxx? Codes to it are sent again at once.">${csrfField(csrf)}<input type="hidden" name="account" value="${b.account_id}"><input type="hidden" name="range" value="${b.range}"><button type="submit" class="danger" aria-label="Unblock ${b.range}">Unblock</button></form>`,
  ]);
  const account = accountId === undefined ? ['Account'] : [];
  return html`${table('Verifications over the last 24 hours, per service and country', [...account, 'Service', 'Country', 'Sent', 'Approved', 'Conversion'], statRows, 'No verifications in the last 24 hours.')}
${table('Number ranges blocked by the fraud guard', [...account, 'Range', 'Blocked at', 'Until', 'When blocked', ''], blockRows, 'No number range is blocked.')}`;
}
