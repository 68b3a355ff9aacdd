import { listMembers } from '../../services/accounts/members.ts';
import { getAccount } from '../../services/accounts/accounts.ts';
import { iso } from '../../util/ids.ts';
import { arg, type Command } from '../command.ts';
import { table } from '../output.ts';

export const memberCommands: Record<string, Command> = {
  'member list': {
    usage: 'member list ACCOUNT_ID',
    description: "List the people who sign in to an account's dashboard, with their roles and whether they use two-factor.",
    async run(ctx, { positionals }, out) {
      const accountId = arg(positionals, 0, 'ACCOUNT_ID');
      // An unknown account is refused as not_found rather than listed as empty.
      await getAccount(ctx, accountId);
      const rows = (await listMembers(ctx, accountId)).map((m) => ({ id: m.id, email: m.email, role: m.role, two_factor: m.two_factor, created_at: iso(m.created_at) }));
      out.print({ data: rows }, table(rows, ['id', 'email', 'role', 'two_factor', 'created_at'], 'members'));
    },
  },
};
