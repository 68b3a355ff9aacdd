import { listBlocks, unblockRange } from '../../services/verify/verify.ts';
import { arg, type Command } from '../command.ts';
import { table } from '../output.ts';

export const verifyCommands: Record<string, Command> = {
  'verify blocks': {
    usage: 'verify blocks [--account ID]',
    description: "Number ranges Verify's fraud guard blocks now (DECISIONS.md §14), of one account or of every account, newest first.",
    options: { account: 'string' },
    optionHelp: { account: 'only this account (default: every account of the installation)' },
    async run(ctx, { values }, out) {
      const blocks = await listBlocks(ctx, values.account as string | undefined);
      out.print({ data: blocks }, table(blocks as unknown as Record<string, unknown>[], ['account_id', 'range', 'blocked_at', 'blocked_until', 'level', 'sent', 'approved'], 'blocked ranges'));
    },
  },
  'verify unblock': {
    usage: 'verify unblock ACCOUNT_ID RANGE',
    description: "End the fraud guard's block of a number range of an account now (RANGE as `verify blocks` shows it, e.g. +447700900). Recorded in the audit log; a range blocked again is blocked twice as long.",
    async run(ctx, { positionals }, out) {
      const accountId = arg(positionals, 0, 'ACCOUNT_ID');
      const range = arg(positionals, 1, 'RANGE');
      await unblockRange(ctx, accountId, range);
      out.print({ account_id: accountId, range, unblocked: true }, `${range} is no longer blocked for ${accountId}.`);
    },
  },
};
