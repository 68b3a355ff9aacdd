/**
 * The webhook outbox after its rows are written (src/services/message-status-changes.ts): what a
 * claimed `webhook` job should send, recording each attempt and scheduling the next one from
 * `WEBHOOK_RETRY_DELAYS_MS`, and the list and manual retry of the `/v1/webhooks/events` API.
 *
 * The schedule lives in the database (the job's `run_at`), never in a timer, so it survives a
 * restart of the process and is shared by any number of workers.
 */
import type { Kysely } from 'kysely';
import { AppError } from '../errors/catalogue.ts';
import type { AccountsTable, Database, JobsTable, WebhookAttemptsTable, WebhookEventsTable, WebhookEventStatus } from '../store/database.ts';
import { chunked } from '../store/chunk.ts';
import { deleteJobs, enqueueJobs } from '../store/repositories/jobs.repository.ts';
import { iso, newId } from '../util/ids.ts';
import type { DeliveryOutcome } from '../webhooks/dispatcher.ts';
import { signingSecrets } from './accounts.ts';
import type { Context } from './context.ts';

/** A `webhook` job's payload: absent for the scheduled attempts, `{manual:true}` for a retry through the API. */
interface JobPayload {
  manual?: boolean;
}

/** One claimed job, ready to send. */
export interface Delivery {
  jobId: string;
  /** A manual retry is one attempt; its failure leaves the event `undelivered` again. */
  manual: boolean;
  event: WebhookEventsTable;
  account: AccountsTable;
}

export interface ClaimedDeliveries {
  deliveries: Delivery[];
  /** Jobs whose event is gone or no longer pending: nothing to send, delete them. */
  stale: string[];
  /**
   * Event ids that have an earlier event of the same message never yet attempted (sms.sent must be
   * attempted before sms.delivered/sms.failed); the caller waits for those or defers.
   */
  earlierUnattempted: Map<string, string[]>;
}

/** Loads the events, accounts and ordering constraints of a batch of claimed jobs in three queries. */
export async function loadDeliveries(ctx: Context, jobs: JobsTable[]): Promise<ClaimedDeliveries> {
  const db = ctx.store.db;
  const events = new Map<string, WebhookEventsTable>();
  for (const part of chunked(jobs.map((j) => j.ref), 1)) {
    for (const e of await db.selectFrom('webhook_events').selectAll().where('id', 'in', part).execute()) events.set(e.id, e);
  }
  const accountIds = [...new Set([...events.values()].map((e) => e.account_id))];
  const accounts = new Map<string, AccountsTable>();
  for (const part of chunked(accountIds, 1)) {
    for (const a of await db.selectFrom('accounts').selectAll().where('id', 'in', part).execute()) accounts.set(a.id, a);
  }
  const messageIds = [...new Set([...events.values()].map((e) => e.message_id))];
  const unattempted: { id: string; message_id: string; created_at: number }[] = [];
  for (const part of chunked(messageIds, 1)) {
    unattempted.push(
      ...(await db
        .selectFrom('webhook_events')
        .select(['id', 'message_id', 'created_at'])
        .where('message_id', 'in', part)
        .where('status', '=', 'pending')
        .where('attempts', '=', 0)
        .execute()),
    );
  }
  const deliveries: Delivery[] = [];
  const stale: string[] = [];
  const earlierUnattempted = new Map<string, string[]>();
  for (const job of jobs) {
    const event = events.get(job.ref);
    const account = event && accounts.get(event.account_id);
    if (!event || !account || event.status !== 'pending') {
      stale.push(job.id);
      continue;
    }
    const payload = job.payload ? (JSON.parse(job.payload) as JobPayload) : {};
    deliveries.push({ jobId: job.id, manual: payload.manual === true, event, account });
    const earlier = unattempted
      .filter((u) => u.message_id === event.message_id && u.id !== event.id && isBefore(u, event))
      .map((u) => u.id);
    if (earlier.length > 0) earlierUnattempted.set(event.id, earlier);
  }
  // Oldest event first, so a message's sms.sent starts before its later events.
  deliveries.sort((a, b) => (isBefore(a.event, b.event) ? -1 : isBefore(b.event, a.event) ? 1 : 0));
  return { deliveries, stale, earlierUnattempted };
}

function isBefore(a: { created_at: number; id: string }, b: { created_at: number; id: string }): boolean {
  const ca = Number(a.created_at);
  const cb = Number(b.created_at);
  return ca < cb || (ca === cb && a.id < b.id);
}

/** The secrets that sign an attempt made now. */
export function secretsFor(delivery: Delivery, now: number): string[] {
  return signingSecrets(delivery.account, now);
}

/** One finished attempt, to record. */
export interface AttemptResult {
  delivery: Delivery;
  attemptedAt: number;
  outcome: DeliveryOutcome;
}

/**
 * The wait before the attempt after attempt number `made` (1-based), or null when `made` was the
 * last one. `delays[i]` is the wait before attempt i+1, counted from attempt i (DECISIONS.md §4).
 */
export function nextDelayMs(delays: readonly number[], made: number): number | null {
  return made < delays.length ? delays[made]! : null;
}

/**
 * Records finished attempts in one transaction: the attempt rows, the event's new state, and the
 * job deleted (delivered, or undelivered after the last attempt) or moved to the next attempt's
 * due time. Recording many at once is what lets one worker keep up with thousands of events a second.
 */
export async function recordAttempts(ctx: Context, results: AttemptResult[]): Promise<void> {
  if (results.length === 0) return;
  const delays = ctx.config.webhook.retryDelaysMs;
  await ctx.store.db.transaction().execute(async (trx) => {
    const attempts: WebhookAttemptsTable[] = [];
    const done: string[] = [];
    for (const { delivery, attemptedAt, outcome } of results) {
      const { event } = delivery;
      const attempt = event.attempts + 1;
      attempts.push({
        id: newId('wha', attemptedAt),
        event_id: event.id,
        attempt,
        attempted_at: attemptedAt,
        http_status: outcome.httpStatus,
        error: outcome.error,
        latency_ms: outcome.latencyMs,
      });
      const delay = outcome.ok || delivery.manual ? null : nextDelayMs(delays, attempt);
      const status: WebhookEventStatus = outcome.ok ? 'delivered' : delay === null ? 'undelivered' : 'pending';
      await trx
        .updateTable('webhook_events')
        .set({ status, attempts: attempt, last_error: outcome.ok ? null : outcome.error, updated_at: attemptedAt })
        .where('id', '=', event.id)
        .execute();
      if (delay === null) done.push(delivery.jobId);
      else await trx.updateTable('jobs').set({ run_at: attemptedAt + delay }).where('id', '=', delivery.jobId).execute();
    }
    for (const part of chunked(attempts, 7)) await trx.insertInto('webhook_attempts').values(part).execute();
    await deleteJobs(trx, done);
  });
}

/** Deletes jobs that have nothing left to send. */
export async function dropStaleJobs(ctx: Context, jobIds: string[]): Promise<void> {
  await deleteJobs(ctx.store.db, jobIds);
}

export interface WebhookEventFilter {
  accountId: string;
  messageId?: string;
  batchId?: string;
  status?: WebhookEventStatus;
}

/** An event as the API shows it. */
export interface WebhookEventView {
  id: string;
  event: string;
  message_id: string;
  batch_id: string | null;
  url: string;
  status: WebhookEventStatus;
  attempt_count: number;
  last_error: string | null;
  next_attempt_at: string | null;
  created_at: string;
  updated_at: string;
  payload: Record<string, unknown>;
  attempts: { attempt: number; attempted_at: string; http_status: number | null; error: string | null; latency_ms: number }[];
}

function listQuery(db: Kysely<Database>, f: WebhookEventFilter) {
  let q = db.selectFrom('webhook_events').where('account_id', '=', f.accountId);
  if (f.messageId !== undefined) q = q.where('message_id', '=', f.messageId);
  if (f.batchId !== undefined) q = q.where('batch_id', '=', f.batchId);
  if (f.status !== undefined) q = q.where('status', '=', f.status);
  return q;
}

async function views(ctx: Context, rows: WebhookEventsTable[]): Promise<WebhookEventView[]> {
  const db = ctx.store.db;
  const ids = rows.map((r) => r.id);
  const attempts = new Map<string, WebhookAttemptsTable[]>();
  const nextAt = new Map<string, number>();
  for (const part of chunked(ids, 1)) {
    for (const a of await db.selectFrom('webhook_attempts').selectAll().where('event_id', 'in', part).orderBy('attempt').execute()) {
      attempts.set(a.event_id, [...(attempts.get(a.event_id) ?? []), a]);
    }
    for (const j of await db.selectFrom('jobs').select(['ref', 'run_at']).where('queue', '=', 'webhook').where('ref', 'in', part).execute()) {
      nextAt.set(j.ref, Number(j.run_at));
    }
  }
  return rows.map((r) => ({
    id: r.id,
    event: r.event,
    message_id: r.message_id,
    batch_id: r.batch_id,
    url: r.url,
    status: r.status,
    attempt_count: r.attempts,
    last_error: r.last_error,
    next_attempt_at: r.status === 'pending' && nextAt.has(r.id) ? iso(nextAt.get(r.id)!) : null,
    created_at: iso(Number(r.created_at)),
    updated_at: iso(Number(r.updated_at)),
    payload: JSON.parse(r.payload) as Record<string, unknown>,
    attempts: (attempts.get(r.id) ?? []).map((a) => ({
      attempt: a.attempt,
      attempted_at: iso(Number(a.attempted_at)),
      http_status: a.http_status,
      error: a.error,
      latency_ms: a.latency_ms,
    })),
  }));
}

/** The account's events, newest first (ties by id, descending), with their attempts. */
export async function listWebhookEvents(ctx: Context, filter: WebhookEventFilter, limit: number, offset: number): Promise<{ rows: WebhookEventView[]; total: number }> {
  const db = ctx.store.db;
  const rows = await listQuery(db, filter).selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute();
  const count = await listQuery(db, filter).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return { rows: await views(ctx, rows), total: Number(count.n) };
}

/**
 * Queues one more attempt of an `undelivered` event of the account, with the same body and event
 * id. Another account's event is reported as not found, so nothing reveals that it exists.
 */
export async function retryWebhookEvent(ctx: Context, accountId: string, eventId: string): Promise<WebhookEventView> {
  const now = ctx.clock();
  const row = await ctx.store.db.transaction().execute(async (trx) => {
    const event = await trx.selectFrom('webhook_events').selectAll().where('id', '=', eventId).where('account_id', '=', accountId).executeTakeFirst();
    if (!event) throw new AppError('webhook_event_not_found');
    if (event.status !== 'undelivered') {
      throw new AppError('webhook_event_not_undelivered', `The event is ${event.status}; only an undelivered event can be retried.`);
    }
    const updated = await trx
      .updateTable('webhook_events')
      .set({ status: 'pending', updated_at: now })
      .where('id', '=', eventId)
      .where('status', '=', 'undelivered')
      .executeTakeFirst();
    if (updated.numUpdatedRows === 0n) throw new AppError('webhook_event_not_undelivered');
    await enqueueJobs(trx, [{ queue: 'webhook', ref: eventId, payload: { manual: true } satisfies JobPayload, runAt: now }], now);
    return { ...event, status: 'pending' as const, updated_at: now };
  });
  ctx.wake('webhook');
  return (await views(ctx, [row]))[0]!;
}
