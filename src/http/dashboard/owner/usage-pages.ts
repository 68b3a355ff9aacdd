/**
 * The owner's Usage (messages, segments and credits per month, destination and status, with its
 * CSV export) and Settings → Data retention (how long this account's data is kept, which the
 * operator sets). Usage reads the daily totals for what the retention purge removed, so it does
 * not change when old messages go.
 */
import type { FastifyInstance } from 'fastify';
import { monthlyUsage, usageCsv } from '../../../services/messages/usage.ts';
import { describeDays, getAccountRetention } from '../../../services/retention/account-retention.ts';
import { html } from '../../html.ts';
import { table } from '../layout.ts';
import { settingsTabs, state, type OwnerArea } from './owner-area.ts';

export function usagePages(app: FastifyInstance, { ctx, render }: OwnerArea): void {
  app.get('/usage', async (request, reply) => {
    const { account } = state(request);
    const lines = await monthlyUsage(ctx, account.id);
    const rows = lines.map((l) => [l.month, l.country === '' ? 'unknown' : `+${l.country}`, l.status, l.messages.toLocaleString('en'), l.segments.toLocaleString('en'), l.credits.toLocaleString('en')]);
    const sum = (k: 'messages' | 'segments' | 'credits') => lines.reduce((a, l) => a + l[k], 0).toLocaleString('en');
    return render(
      request,
      reply,
      'Usage',
      'usage',
      html`<p>Messages, segments and credits per month (UTC), destination and status, over the last 12 months: <strong id="usage-messages">${sum('messages')}</strong> messages, <strong id="usage-segments">${sum('segments')}</strong> segments, <strong id="usage-credits">${sum('credits')}</strong> credits kept (refunds deducted). Messages removed by the <a href="/dashboard/settings/privacy">retention</a> still count here.</p>
<p><a href="/dashboard/usage.csv" download>Download as CSV</a></p>
${table('Usage per month', ['Month', 'Destination', 'Status', 'Messages', 'Segments', 'Credits'], rows, 'No messages in the last 12 months.')}`,
    );
  });

  app.get('/usage.csv', async (request, reply) => {
    const { account } = state(request);
    const csv = usageCsv(await monthlyUsage(ctx, account.id));
    return reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="${account.id}-usage.csv"`).send(csv);
  });

  app.get('/settings/privacy', async (request, reply) => {
    const { account } = state(request);
    const r = await getAccountRetention(ctx, account.id);
    const origin = (set: boolean) => (set ? 'set for this account by the operator' : "this server's default");
    const rows = [
      ['Message text (sent and received)', html`<span id="retention-body">${describeDays(r.retention.body_days)}</span>`, origin(r.overridden.body_days)],
      ['Messages, inbound messages, webhook events', html`<span id="retention-messages">${describeDays(r.retention.message_days)}</span>`, origin(r.overridden.message_days)],
      ['Phone numbers masked after', html`<span id="retention-mask">${describeDays(r.retention.mask_numbers_days)}</span>`, origin(r.overridden.mask_numbers_days)],
    ];
    return render(
      request,
      reply,
      'Data retention',
      'settings',
      html`${settingsTabs('privacy')}<section><h2>How long your data is kept</h2>
<p>After these times the text is removed, numbers keep only their first digits (the last four become XXXX) and whole messages are deleted. Counts, segments and credits stay in the overview, the usage and the ledger. The operator of this server can shorten them; write to them to change them.</p>
${table('Retention', ['What', 'Kept', 'Set by'], rows, '')}
<p>To remove a person's number from every message now, use <code>POST /v1/privacy/erasures</code> (see the API documentation); single messages can be redacted from their page.</p></section>`,
    );
  });
}
