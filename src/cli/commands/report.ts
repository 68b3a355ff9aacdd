import { marginReport, operatorMessage } from '../../services/routes/margin.ts';
import { iso } from '../../util/ids.ts';
import { arg, required, type Command } from '../command.ts';
import { table } from '../output.ts';

export const reportCommands: Record<string, Command> = {
  'message show': {
    usage: 'message show ID',
    description:
      'Show one message as the operator sees it: its account, status, segments, the credits charged, the route that took it, what that route charges for it, and the routes that refused it or did not answer. Never the body.',
    async run(ctx, { positionals }, out) {
      const m = await operatorMessage(ctx, arg(positionals, 0, 'ID'));
      const data = {
        id: m.id,
        account_id: m.account_id,
        to: m.recipient,
        from: m.sender,
        status: m.status,
        segments: m.segments,
        credits_charged: m.credits,
        route: m.route,
        carrier_cost: m.route_cost,
        routes_tried: m.routes_tried_list,
        carrier_message_id: m.carrier_message_id,
        error_code: m.error_code,
        error_message: m.error_message,
        created_at: iso(m.created_at),
        sent_at: iso(m.sent_at),
        delivered_at: iso(m.delivered_at),
      };
      const lines = Object.entries(data).map(([k, v]) => `${k.padEnd(18)} ${Array.isArray(v) ? v.join(',') || '-' : (v ?? '-')}`);
      out.print(data, lines.join('\n'));
    },
  },
  'report margin': {
    usage: 'report margin --from DATE --to DATE',
    description:
      'Per UTC day and route: the messages the route took, their segments, the credits charged for them, what the carrier charges (segments × the route\'s cost per segment when it took each message) and the margin. DATE is YYYY-MM-DD; both days are included.\n\n' +
      'With --json: {"from","to","data":[{"day","route","messages","segments","credits_charged","carrier_cost","margin"}],"totals":{...}}.',
    options: { from: 'string', to: 'string' },
    optionHelp: { from: 'first day (UTC), YYYY-MM-DD', to: 'last day (UTC), YYYY-MM-DD' },
    async run(ctx, { values }, out) {
      const report = await marginReport(ctx, required(values.from, '--from'), required(values.to, '--to'));
      const rows: Record<string, unknown>[] = [...report.data, { day: 'total', route: '', ...report.totals }];
      out.print(report, report.data.length === 0 ? table([], [], 'routed messages') : table(rows, ['day', 'route', 'messages', 'segments', 'credits_charged', 'carrier_cost', 'margin']));
    },
  },
};
