import { allAuditEvents, type AuditEvent } from '../../services/audit/audit.ts';
import { UsageError, type Command } from '../command.ts';

/** Records printed at most; a longer history is read with --since or the CSV of /operator/audit. */
const MAX_LISTED = 1000;

function line(e: AuditEvent): string {
  const who = e.actor.email ?? e.actor.id ?? '';
  const target = e.target ? ` ${e.target.type}:${e.target.id}` : '';
  const changes = Object.entries(e.changes)
    .map(([k, [a, b]]) => `${k}=${JSON.stringify(a)}→${JSON.stringify(b)}`)
    .join(' ');
  return `${e.at}  ${e.account_id ?? '-'}  ${e.actor.type}:${who}  ${e.action}${target}${e.ip ? ` from ${e.ip}` : ''}${changes ? `  ${changes}` : ''}`;
}

export const auditCommands: Record<string, Command> = {
  'audit list': {
    usage: 'audit list [--account ID] [--action A] [--since ISO] [--limit N]',
    description: `The audit log of every account (DECISIONS.md §15), newest first: who changed what, from where, before and after. At most ${MAX_LISTED} records unless --limit says fewer.`,
    options: { account: 'string', action: 'string', since: 'string', limit: 'string' },
    optionHelp: {
      account: 'only this account',
      action: 'an action (api_key.created) or a resource (api_key)',
      since: 'records at or after this ISO 8601 date or date-time',
      limit: `at most N records (1 to ${MAX_LISTED})`,
    },
    async run(ctx, { values }, out) {
      const raw = typeof values.limit === 'string' ? values.limit : String(MAX_LISTED);
      if (!/^\d{1,4}$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_LISTED) throw new UsageError(`--limit is a whole number from 1 to ${MAX_LISTED}.`);
      const q = { accountId: values.account as string | undefined, action: values.action as string | undefined, since: values.since as string | undefined };
      const data: AuditEvent[] = [];
      for await (const e of allAuditEvents(ctx, q, Number(raw))) data.push(e);
      out.print({ data }, data.length === 0 ? 'No records.' : data.map(line).join('\n'));
    },
  },
};
