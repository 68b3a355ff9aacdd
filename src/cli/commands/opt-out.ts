import { addOptOut, listOptOuts, removeOptOut } from '../../services/opt-outs/opt-outs.ts';
import { arg, type Command } from '../command.ts';
import { table } from '../output.ts';

export const optOutCommands: Record<string, Command> = {
  'opt-out add': {
    usage: 'opt-out add ACCOUNT_ID PHONE',
    description: 'Opt a recipient out of an account (source "operator"): its sends to them are refused at once.',
    async run(ctx, { positionals }, out) {
      const { optOut, created } = await addOptOut(ctx, arg(positionals, 0, 'ACCOUNT_ID'), arg(positionals, 1, 'PHONE'), 'operator');
      out.print({ ...optOut, created }, created ? `${optOut.phone} is opted out.` : `${optOut.phone} was already opted out (${optOut.source}).`);
    },
  },
  'opt-out remove': {
    usage: 'opt-out remove ACCOUNT_ID PHONE',
    description: 'Take a recipient off an account’s opt-out list; refused for a recipient who replied STOP (only their START lifts it).',
    async run(ctx, { positionals }, out) {
      const accountId = arg(positionals, 0, 'ACCOUNT_ID');
      const phone = arg(positionals, 1, 'PHONE');
      await removeOptOut(ctx, accountId, phone, 'operator');
      out.print({ account_id: accountId, phone, removed: true }, `${phone} is off the list of ${accountId}.`);
    },
  },
  'opt-out list': {
    usage: 'opt-out list ACCOUNT_ID',
    description: 'An account’s opt-out list, newest first (at most 1,000).',
    async run(ctx, { positionals }, out) {
      const { rows, total } = await listOptOuts(ctx, arg(positionals, 0, 'ACCOUNT_ID'), undefined, 1000, 0);
      out.print({ data: rows, total }, table(rows as unknown as Record<string, unknown>[], ['phone', 'source', 'created_at'], 'opt-outs'));
    },
  },
};
