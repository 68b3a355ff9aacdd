import { listUnrouted, simulateInbound } from '../../services/inbound/inbound.ts';
import { required, UsageError, type Command } from '../command.ts';
import { table } from '../output.ts';

export const inboundCommands: Record<string, Command> = {
  'simulate inbound': {
    usage: 'simulate inbound --from PHONE --to NUMBER --message TEXT',
    description:
      'With the simulator as carrier: deliver a message from PHONE to NUMBER, as a carrier would. It is stored for the account holding NUMBER and raises sms.received (STOP, START and HELP apply); to a number nobody holds, it is kept as unrouted.',
    options: { from: 'string', to: 'string', message: 'string' },
    optionHelp: { from: 'the sender, E.164', to: 'an assigned number (E.164 or short code)', message: 'the text' },
    async run(ctx, { values }, out) {
      const { inbound, routed, accountId } = await simulateInbound(ctx, {
        from: required(values.from, '--from'),
        to: required(values.to, '--to'),
        message: required(values.message, '--message'),
      });
      out.print(
        { ...inbound, account_id: accountId },
        routed ? `Delivered ${inbound.id} from ${inbound.from} to ${inbound.to} (account ${accountId}).` : `No account holds ${inbound.to}: ${inbound.id} is kept as unrouted.`,
      );
    },
  },
  'inbound unrouted': {
    usage: 'inbound unrouted [--limit N]',
    description: 'List the messages carriers delivered to numbers no account held, newest first.',
    options: { limit: 'string' },
    optionHelp: { limit: 'at most this many (default 100, at most 1000)' },
    async run(ctx, { values }, out) {
      const limit = values.limit === undefined ? 100 : Number(values.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError('--limit must be a whole number from 1 to 1000.');
      const rows = await listUnrouted(ctx, limit);
      const lines = rows.map((r) => ({ ...r, message: r.message.replace(/\s+/g, ' ').slice(0, 60) }) as Record<string, unknown>);
      out.print({ data: rows }, table(lines, ['id', 'from', 'to', 'received_at', 'message'], 'unrouted inbound messages'));
    },
  },
};
