import { createSmppUser, deleteSmppUser, listSmppUsers, rotateSmppUser, type SmppUserWithPassword } from '../../services/smpp-access/smpp-users.ts';
import { iso } from '../../util/ids.ts';
import { arg, required, UsageError, type Command } from '../command.ts';
import { table } from '../output.ts';

function whole(value: unknown, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^\d+$/.test(value)) throw new UsageError(`${flag} is a whole number.`);
  return Number(value);
}

function shown(u: SmppUserWithPassword) {
  return { system_id: u.system_id, account_id: u.account_id, password: u.password, tps: u.tps, max_binds: u.max_binds, allow: u.allow };
}

function passwordText(u: SmppUserWithPassword, what: string): string {
  const allow = u.allow.length > 0 ? u.allow.join(',') : 'any address';
  return `${what} ${u.system_id} for ${u.account_id} (tps ${u.tps}, max binds ${u.max_binds}, from ${allow}); password:\n\n  ${u.password}\n\nThis is the only time the password is shown. Store it now.`;
}

export const smppUserCommands: Record<string, Command> = {
  'smpp-user create': {
    usage: 'smpp-user create ACCOUNT_ID --system-id NAME [--tps 100] [--max-binds 4] [--allow CIDR,...]',
    description: 'Create SMPP credentials for an account: its systems bind to Pigeon over SMPP 3.4 with them. The 8-character password is printed once and stored hashed.',
    options: { 'system-id': 'string', tps: 'string', 'max-binds': 'string', allow: 'string' },
    optionHelp: {
      'system-id': '1 to 15 of A-Z, a-z, 0-9, _ and -; unique in the installation',
      tps: 'submit_sm per second over all its binds (default 100; a burst of at least 10 passes)',
      'max-binds': 'binds at once (default 4)',
      allow: 'comma-separated addresses or CIDR ranges it may bind from (default: any)',
    },
    async run(ctx, { positionals, values }, out) {
      const allow = values.allow as string | undefined;
      if (allow !== undefined && allow.split(',').every((s) => s.trim() === '')) throw new UsageError('--allow needs at least one address or CIDR range; leave it out for any address.');
      const tps = whole(values.tps, '--tps');
      const maxBinds = whole(values['max-binds'], '--max-binds');
      const created = await createSmppUser(ctx, arg(positionals, 0, 'ACCOUNT_ID'), {
        systemId: required(values['system-id'], '--system-id'),
        ...(tps !== undefined ? { tps } : {}),
        ...(maxBinds !== undefined ? { maxBinds } : {}),
        ...(allow !== undefined ? { allow: allow.split(',').filter((s) => s.trim() !== '') } : {}),
      });
      out.print(shown(created), passwordText(created, 'SMPP user'));
    },
  },
  'smpp-user list': {
    usage: 'smpp-user list [--account ID]',
    description: 'List SMPP users with their live binds (in every process) and the receipts and inbound messages waiting for them.',
    options: { account: 'string' },
    optionHelp: { account: 'only this account' },
    async run(ctx, { values }, out) {
      const users = await listSmppUsers(ctx, { accountId: values.account as string | undefined });
      const data = users.map((u) => ({
        system_id: u.system_id,
        account_id: u.account_id,
        tps: u.tps,
        max_binds: u.max_binds,
        allow: u.allow,
        created_at: iso(u.created_at),
        rotated_at: iso(u.rotated_at),
        waiting: u.waiting,
        binds: u.binds.map((b) => ({ type: b.type, address: b.address, since: iso(b.since), submits: b.submits })),
      }));
      const rows = data.map((u) => ({ ...u, allow: u.allow.join(',') || 'any', binds: u.binds.map((b) => `${b.type}@${b.address}`).join(' ') || '-' }));
      out.print({ data }, table(rows, ['system_id', 'account_id', 'tps', 'max_binds', 'allow', 'binds', 'waiting', 'created_at'], 'SMPP users'));
    },
  },
  'smpp-user rotate': {
    usage: 'smpp-user rotate SYSTEM_ID',
    description: "Give an SMPP user a new password, printed once; its binds end within 2 seconds and must bind again with it.",
    async run(ctx, { positionals }, out) {
      const rotated = await rotateSmppUser(ctx, arg(positionals, 0, 'SYSTEM_ID'));
      out.print(shown(rotated), passwordText(rotated, 'New password of SMPP user'));
    },
  },
  'smpp-user delete': {
    usage: 'smpp-user delete SYSTEM_ID',
    description: 'Delete an SMPP user and what waits for it; its binds end within 2 seconds.',
    async run(ctx, { positionals }, out) {
      const deleted = await deleteSmppUser(ctx, arg(positionals, 0, 'SYSTEM_ID'));
      out.print({ system_id: deleted.system_id, account_id: deleted.account_id, deleted: true }, `SMPP user ${deleted.system_id} is deleted.`);
    },
  },
};
