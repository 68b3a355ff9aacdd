import { describeDays, getAccountRetention, setAccountRetention, type RetentionChange, type RetentionView } from '../../services/retention/account-retention.ts';
import { eraseNow, listErasures, type ErasureView } from '../../services/retention/erasures.ts';
import { runPurge } from '../../services/retention/purge.ts';
import { arg, UsageError, type Command } from '../command.ts';
import { table } from '../output.ts';

/** A number of days, or `default` to follow the installation again. */
function daysFlag(value: unknown, flag: string): number | null | undefined {
  if (value === undefined) return undefined;
  if (value === 'default') return null;
  if (typeof value !== 'string' || !/^\d{1,6}$/.test(value)) throw new UsageError(`${flag} must be a whole number of days (0 or more), or "default".`);
  return Number(value);
}

function describeRetention(v: RetentionView): string {
  const line = (what: string, days: number | null, set: boolean) => `${what}: ${describeDays(days)}${set ? '' : ' (installation default)'}`;
  return [
    `Account ${v.id}`,
    line('message text', v.retention.body_days, v.overridden.body_days),
    line('messages', v.retention.message_days, v.overridden.message_days),
    line('numbers masked after', v.retention.mask_numbers_days, v.overridden.mask_numbers_days),
  ].join('\n');
}

function describeErasure(e: ErasureView): string {
  const c = e.counts;
  const scope = e.account_id === null ? 'every account' : `account ${e.account_id}`;
  return `Erasure ${e.id} of ${e.phone} in ${scope}: ${e.status}. Redacted ${c.messages} messages, ${c.inbound_messages} inbound messages, ${c.events} webhook events, ${c.idempotent_responses} stored responses.${
    e.status === 'pending' ? ' Messages still on their way are redacted by the workers once final.' : ''
  }`;
}

export const privacyCommands: Record<string, Command> = {
  'account retention': {
    usage: 'account retention ACCOUNT_ID [--body-days N] [--message-days N] [--mask-numbers-days N]',
    description: 'Show or shorten how long an account’s data is kept: message text, whole messages, numbers before they are masked. 0 removes everything at the next purge; "default" follows the installation again; never longer than the installation’s RETENTION_* settings.',
    options: { 'body-days': 'string', 'message-days': 'string', 'mask-numbers-days': 'string' },
    optionHelp: {
      'body-days': 'days the text of messages is kept (at most RETENTION_BODY_DAYS)',
      'message-days': 'days messages, inbound messages and webhook events are kept (at most RETENTION_MESSAGE_DAYS)',
      'mask-numbers-days': 'days before numbers keep only their first digits (at most RETENTION_MASK_NUMBERS_DAYS when that is set)',
    },
    async run(ctx, { positionals, values }, out) {
      const id = arg(positionals, 0, 'ACCOUNT_ID');
      const change: RetentionChange = {};
      const body = daysFlag(values['body-days'], '--body-days');
      if (body !== undefined) change.bodyDays = body;
      const messages = daysFlag(values['message-days'], '--message-days');
      if (messages !== undefined) change.messageDays = messages;
      const mask = daysFlag(values['mask-numbers-days'], '--mask-numbers-days');
      if (mask !== undefined) change.maskNumbersDays = mask;
      const view = Object.keys(change).length === 0 ? await getAccountRetention(ctx, id) : await setAccountRetention(ctx, id, change);
      out.print(view, describeRetention(view));
    },
  },
  'retention run': {
    usage: 'retention run',
    description: 'Run the retention purge now (the workers run it every 15 minutes): removes the text, masks the numbers and deletes the messages that are due, and prints what it removed.',
    async run(ctx, _args, out) {
      const r = await runPurge(ctx);
      out.print(
        r,
        [
          `Messages deleted: ${r.messages_deleted} (counted into the daily totals first)`,
          `Message texts removed: ${r.bodies_removed}`,
          `Message numbers masked: ${r.numbers_masked}`,
          `Inbound messages deleted: ${r.inbound_deleted}`,
          `Inbound texts removed: ${r.inbound_bodies_removed}`,
          `Inbound numbers masked: ${r.inbound_numbers_masked}`,
          `Webhook events deleted: ${r.events_deleted}`,
          `Audit log records deleted: ${r.audit_events_deleted}`,
          `Batches: ${r.batches}`,
        ].join('\n'),
      );
    },
  },
  'privacy erase': {
    usage: 'privacy erase PHONE [--account ID]',
    description: 'Erase a phone number from the stored messages, inbound messages, webhook events and idempotent responses of one account, or of every account without --account. Recorded (privacy list); opt-outs keep the number.',
    options: { account: 'string' },
    optionHelp: { account: 'only this account (default: every account of the installation)' },
    async run(ctx, { positionals, values }, out) {
      const erasure = await eraseNow(ctx, { accountId: (values.account as string | undefined) ?? null, phone: arg(positionals, 0, 'PHONE') });
      out.print(erasure, describeErasure(erasure));
    },
  },
  'privacy list': {
    usage: 'privacy list',
    description: 'The erasures asked through the API or the CLI, newest first (at most 1,000); numbers are shown masked.',
    async run(ctx, _args, out) {
      const rows = await listErasures(ctx, 1000);
      const flat = rows.map((e) => ({ id: e.id, account_id: e.account_id ?? '(every account)', phone: e.phone, requested_by: e.requested_by, status: e.status, messages: e.counts.messages, inbound: e.counts.inbound_messages, created_at: e.created_at }));
      out.print({ data: rows }, table(flat, ['id', 'account_id', 'phone', 'requested_by', 'status', 'messages', 'inbound', 'created_at'], 'erasures'));
    },
  },
};
