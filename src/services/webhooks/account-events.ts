/**
 * Account events (DECISIONS.md §8): `sms.received`, `recipient.opted_out`, `recipient.opted_in`,
 * written to the webhook outbox in the transaction of what raised them, for the account's events
 * URL. The webhook worker then delivers them exactly like delivery events: signed with the
 * account's secret, from the same outbox, with the same retries (webhook-events.ts).
 */
import type { Transaction } from 'kysely';
import type { Database, WebhookEventsTable } from '../../store/database.ts';
import type { Executor } from '../../store/connect.ts';
import { insertRows } from '../../store/insert-rows.ts';
import { enqueueJobs } from '../../store/repositories/jobs.repository.ts';
import { eventsUrlsOf } from '../../store/repositories/accounts.repository.ts';
import { iso, newId } from '../../util/ids.ts';

export type AccountEventName =
  | 'sms.received'
  | 'recipient.opted_out'
  | 'recipient.opted_in'
  | 'verification.approved'
  | 'verification.canceled'
  | 'verification.expired'
  | 'verification.max_attempts_reached'
  | 'verification.blocked';

/**
 * Queues one event for the account's events URL in the caller's transaction; nothing when the
 * account has none. Returns the event's id, or null.
 */
export async function queueAccountEvent(
  trx: Transaction<Database>,
  account: { account_id: string; events_url: string | null },
  event: AccountEventName,
  data: Record<string, unknown>,
  now: number,
  inboundId: string | null,
): Promise<string | null> {
  if (!account.events_url) return null;
  return queueWebhookEvent(trx, { accountId: account.account_id, messageId: null, batchId: null, inboundId, event, url: account.events_url, body: { event, timestamp: iso(now), data } }, now);
}

/**
 * Queues several account events in the caller's transaction, the events of an account with no
 * events URL left out: one read of the accounts' URLs, one insert of the events and one of their
 * jobs, where each event's own `queueAccountEvent` would cost its account's read and two inserts.
 */
export async function queueAccountEvents(trx: Executor, events: readonly { accountId: string; event: AccountEventName; data: Record<string, unknown>; now: number }[]): Promise<void> {
  if (events.length === 0) return;
  const urls = await eventsUrlsOf(trx, [...new Set(events.map((e) => e.accountId))]);
  const rows: WebhookEventsTable[] = [];
  for (const e of events) {
    const url = urls.get(e.accountId);
    if (url) rows.push(eventRow({ accountId: e.accountId, messageId: null, batchId: null, inboundId: null, event: e.event, url, body: { event: e.event, timestamp: iso(e.now), data: e.data } }, e.now));
  }
  if (rows.length === 0) return;
  await insertRows(trx, 'webhook_events', rows);
  await enqueueJobs(trx, rows.map((r) => ({ queue: 'webhook' as const, ref: r.id, runAt: Number(r.created_at) })), Math.max(...rows.map((r) => Number(r.created_at))));
}

function eventRow(e: { accountId: string; messageId: string | null; batchId: string | null; inboundId: string | null; event: string; url: string; body: Record<string, unknown> }, now: number): WebhookEventsTable {
  return {
    id: newId('evt', now),
    account_id: e.accountId,
    message_id: e.messageId,
    inbound_id: e.inboundId,
    batch_id: e.batchId,
    event: e.event,
    url: e.url,
    payload: JSON.stringify(e.body),
    status: 'pending',
    attempts: 0,
    last_error: null,
    created_at: now,
    updated_at: now,
  };
}

/**
 * Writes one event to the webhook outbox, with its delivery job, in the caller's transaction:
 * delivered, signed and retried by the webhook worker like every event. Returns its id.
 */
export async function queueWebhookEvent(
  trx: Executor,
  e: { accountId: string; messageId: string | null; batchId: string | null; inboundId: string | null; event: string; url: string; body: Record<string, unknown> },
  now: number,
): Promise<string> {
  const row = eventRow(e, now);
  await insertRows(trx, 'webhook_events', [row]);
  await enqueueJobs(trx, [{ queue: 'webhook', ref: row.id, runAt: now }], now);
  return row.id;
}
