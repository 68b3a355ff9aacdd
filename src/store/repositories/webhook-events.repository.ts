/**
 * The webhook outbox's events and attempts (src/services/webhooks/webhook-events.ts): what the webhook
 * worker loads for a batch of claimed jobs, what it records after sending, and the
 * `/v1/webhooks/events` list and retry. The jobs themselves are in jobs.repository.ts.
 */
import type { Executor } from '../connect.ts';
import type { AccountsTable, WebhookAttemptsTable, WebhookEventsTable, WebhookEventStatus } from '../database.ts';
import { chunked } from '../chunk.ts';
import { ofQueue } from './jobs.repository.ts';

export type WebhookEventRow = WebhookEventsTable;
export type WebhookAttemptRow = WebhookAttemptsTable;

export interface WebhookEventFilter {
  accountId: string;
  messageId?: string;
  batchId?: string;
  status?: WebhookEventStatus;
}

export async function webhookEventsByIds(db: Executor, ids: readonly string[]): Promise<WebhookEventRow[]> {
  const out: WebhookEventRow[] = [];
  for (const part of chunked(ids, 1)) out.push(...(await db.selectFrom('webhook_events').selectAll().where('id', 'in', part).execute()));
  return out;
}

/** The accounts the events belong to (their secrets sign the deliveries). */
export async function accountsByIds(db: Executor, ids: readonly string[]): Promise<AccountsTable[]> {
  const out: AccountsTable[] = [];
  for (const part of chunked(ids, 1)) out.push(...(await db.selectFrom('accounts').selectAll().where('id', 'in', part).execute()));
  return out;
}

/** The pending events of these messages never attempted yet. */
export async function unattemptedEventsOfMessages(db: Executor, messageIds: readonly string[]): Promise<{ id: string; message_id: string | null; created_at: number }[]> {
  const out: { id: string; message_id: string | null; created_at: number }[] = [];
  for (const part of chunked(messageIds, 1)) {
    out.push(
      ...(await db
        .selectFrom('webhook_events')
        .select(['id', 'message_id', 'created_at'])
        .where('message_id', 'in', part)
        .where('status', '=', 'pending')
        .where('attempts', '=', 0)
        .execute()),
    );
  }
  return out;
}

/** The event's state after an attempt. */
export async function setWebhookEventAttempted(
  db: Executor,
  id: string,
  update: { status: WebhookEventStatus; attempts: number; lastError: string | null; updatedAt: number },
): Promise<void> {
  await db
    .updateTable('webhook_events')
    .set({ status: update.status, attempts: update.attempts, last_error: update.lastError, updated_at: update.updatedAt })
    .where('id', '=', id)
    .execute();
}

export async function insertWebhookAttempts(db: Executor, attempts: readonly WebhookAttemptRow[]): Promise<void> {
  for (const part of chunked(attempts, 7)) await db.insertInto('webhook_attempts').values(part).execute();
}

function filtered(db: Executor, f: WebhookEventFilter) {
  let q = db.selectFrom('webhook_events').where('account_id', '=', f.accountId);
  if (f.messageId !== undefined) q = q.where('message_id', '=', f.messageId);
  if (f.batchId !== undefined) q = q.where('batch_id', '=', f.batchId);
  if (f.status !== undefined) q = q.where('status', '=', f.status);
  return q;
}

/** One page of the account's events, newest first (ties by id, descending), and how many match. */
export async function webhookEventsPage(db: Executor, filter: WebhookEventFilter, limit: number, offset: number): Promise<{ rows: WebhookEventRow[]; total: number }> {
  const rows = await filtered(db, filter).selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute();
  const count = await filtered(db, filter).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return { rows, total: Number(count.n) };
}

/** The attempts of these events, in attempt order, and when each still-queued one runs next. */
export async function attemptsAndNextRuns(db: Executor, eventIds: readonly string[]): Promise<{ attempts: WebhookAttemptRow[]; nextRuns: { ref: string; run_at: number }[] }> {
  const attempts: WebhookAttemptRow[] = [];
  const nextRuns: { ref: string; run_at: number }[] = [];
  for (const part of chunked(eventIds, 1)) {
    attempts.push(...(await db.selectFrom('webhook_attempts').selectAll().where('event_id', 'in', part).orderBy('attempt').execute()));
    nextRuns.push(...(await db.selectFrom('jobs').select(['ref', 'run_at']).where('queue', '=', 'webhook').where(ofQueue('webhook')).where('ref', 'in', part).execute()));
  }
  return { attempts, nextRuns };
}

export async function webhookEventOfAccount(db: Executor, id: string, accountId: string): Promise<WebhookEventRow | undefined> {
  return db.selectFrom('webhook_events').selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
}

/** Puts an undelivered event back to pending; false if it was not undelivered. */
export async function requeueUndeliveredEvent(db: Executor, id: string, now: number): Promise<boolean> {
  const updated = await db.updateTable('webhook_events').set({ status: 'pending', updated_at: now }).where('id', '=', id).where('status', '=', 'undelivered').executeTakeFirst();
  return updated.numUpdatedRows !== 0n;
}

/** The stored events of these messages (delivery events), for redaction. */
export async function eventPayloadsOfMessages(db: Executor, messageIds: readonly string[]): Promise<{ id: string; message_id: string | null; payload: string }[]> {
  const out: { id: string; message_id: string | null; payload: string }[] = [];
  for (const part of chunked(messageIds, 1)) out.push(...(await db.selectFrom('webhook_events').select(['id', 'message_id', 'payload']).where('message_id', 'in', part).execute()));
  return out;
}

/** The stored events an inbound message raised (`sms.received`, an opt-out its keyword caused). */
export async function eventPayloadsOfInbound(db: Executor, inboundId: string): Promise<{ id: string; payload: string }[]> {
  return db.selectFrom('webhook_events').select(['id', 'payload']).where('inbound_id', '=', inboundId).execute();
}

export async function setEventPayload(db: Executor, id: string, payload: string): Promise<void> {
  await db.updateTable('webhook_events').set({ payload }).where('id', '=', id).execute();
}
