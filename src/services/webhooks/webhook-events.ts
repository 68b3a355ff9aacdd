/**
 * The webhook outbox after its rows are written (src/services/messages/message-status-changes.ts): what a
 * claimed `webhook` job should send, recording each attempt and scheduling the next one from
 * `WEBHOOK_RETRY_DELAYS_MS`, and the list and manual retry of the `/v1/webhooks/events` API.
 *
 * The schedule lives in the database (the job's `run_at`), never in a timer, so it survives a
 * restart of the process and is shared by any number of workers.
 */
import { retryDelay, schedule, type RetryPolicy } from '../../domain/retry-policy.ts';
import { AppError } from '../../errors/catalogue.ts';
import type { AccountsTable, JobsTable, WebhookAttemptsTable, WebhookEventsTable, WebhookEventStatus } from '../../store/database.ts';
import { deleteJobs, enqueueJobs, rescheduleJob } from '../../store/repositories/jobs.repository.ts';
import {
  accountsByIds,
  attemptsAndNextRuns,
  insertWebhookAttempts,
  requeueUndeliveredEvent,
  setWebhookEventAttempted,
  unattemptedEventsOfMessages,
  webhookEventOfAccount,
  webhookEventsByIds,
  webhookEventsPage,
  type WebhookEventFilter,
} from '../../store/repositories/webhook-events.repository.ts';
import { iso, newId } from '../../util/ids.ts';
import type { DeliveryOutcome, DeliveryRequest } from '../../webhooks/dispatcher.ts';
import { signingSecrets } from '../accounts/accounts.ts';
import { TWILIO_INBOUND_EVENT } from '../twilio/callback-params.ts';
import { recordAudit } from '../audit/audit.ts';
import type { Context } from '../context.ts';

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
  const events = new Map((await webhookEventsByIds(db, jobs.map((j) => j.ref))).map((e) => [e.id, e]));
  const accountIds = [...new Set([...events.values()].map((e) => e.account_id))];
  const accounts = new Map((await accountsByIds(db, accountIds)).map((a) => [a.id, a]));
  const messageIds = [...new Set([...events.values()].flatMap((e) => (e.message_id === null ? [] : [e.message_id])))];
  const unattempted = await unattemptedEventsOfMessages(db, messageIds);
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
      .filter((u) => event.message_id !== null && u.message_id === event.message_id && u.id !== event.id && isBefore(u, event))
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

/**
 * What an attempt made now sends: the stored JSON body signed with the account's webhook
 * secrets, or for a Twilio-style event (`twilio.*`) its parameters with the account's SID,
 * signed with its Auth Token (the current one: a receiver checks one signature).
 */
export function deliveryRequest(delivery: Delivery, now: number): DeliveryRequest {
  const { event, account } = delivery;
  const base = { url: event.url, body: event.payload, eventId: event.id, now };
  if (!event.event.startsWith('twilio.')) return { ...base, secrets: secretsFor(delivery, now) };
  const params = { ...(JSON.parse(event.payload) as Record<string, string>), AccountSid: account.twilio_sid ?? '' };
  return { ...base, secrets: [], twilio: { params, authToken: account.twilio_token ?? '', readAnswer: event.event === TWILIO_INBOUND_EVENT } };
}

/** One finished attempt, to record. */
export interface AttemptResult {
  delivery: Delivery;
  attemptedAt: number;
  outcome: DeliveryOutcome;
}

/**
 * The retry policy of webhook attempts: `WEBHOOK_RETRY_DELAYS_MS` as an exact schedule, no jitter
 * (DECISIONS.md §4: `delays[i]` is the wait before attempt i+1, counted from attempt i).
 */
export function webhookRetryPolicy(delays: readonly number[]): RetryPolicy {
  return schedule(delays);
}

/**
 * Records finished attempts in one transaction: the attempt rows, the event's new state, and the
 * job deleted (delivered, or undelivered after the last attempt) or moved to the next attempt's
 * due time. Recording many at once is what lets one worker keep up with thousands of events a second.
 */
export async function recordAttempts(ctx: Context, results: AttemptResult[]): Promise<void> {
  if (results.length === 0) return;
  const policy = webhookRetryPolicy(ctx.config.webhook.retryDelaysMs);
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
      const delay = outcome.ok || delivery.manual ? null : retryDelay(policy, attempt);
      const status: WebhookEventStatus = outcome.ok ? 'delivered' : delay === null ? 'undelivered' : 'pending';
      await setWebhookEventAttempted(trx, event.id, { status, attempts: attempt, lastError: outcome.ok ? null : outcome.error, updatedAt: attemptedAt });
      if (delay === null) done.push(delivery.jobId);
      else await rescheduleJob(trx, delivery.jobId, attemptedAt + delay);
    }
    await insertWebhookAttempts(trx, attempts);
    await deleteJobs(trx, done);
  });
}

/** Deletes jobs that have nothing left to send. */
export async function dropStaleJobs(ctx: Context, jobIds: string[]): Promise<void> {
  await deleteJobs(ctx.store.db, jobIds);
}

export type { WebhookEventFilter };

/** An event as the API shows it. */
export interface WebhookEventView {
  id: string;
  event: string;
  /** Null for an account event (inbound, opt-outs). */
  message_id: string | null;
  /** The inbound message of an account event; null otherwise. */
  inbound_id: string | null;
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

async function views(ctx: Context, rows: WebhookEventsTable[]): Promise<WebhookEventView[]> {
  const found = await attemptsAndNextRuns(ctx.store.db, rows.map((r) => r.id));
  const attempts = new Map<string, WebhookAttemptsTable[]>();
  for (const a of found.attempts) attempts.set(a.event_id, [...(attempts.get(a.event_id) ?? []), a]);
  const nextAt = new Map(found.nextRuns.map((j) => [j.ref, Number(j.run_at)]));
  return rows.map((r) => ({
    id: r.id,
    event: r.event,
    message_id: r.message_id,
    inbound_id: r.inbound_id ?? null,
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
  const { rows, total } = await webhookEventsPage(ctx.store.db, filter, limit, offset);
  return { rows: await views(ctx, rows), total };
}

/**
 * Queues one more attempt of an `undelivered` event of the account, with the same body and event
 * id. Another account's event is reported as not found, so nothing reveals that it exists.
 */
export async function retryWebhookEvent(ctx: Context, accountId: string, eventId: string): Promise<WebhookEventView> {
  const now = ctx.clock();
  const row = await ctx.store.db.transaction().execute(async (trx) => {
    const event = await webhookEventOfAccount(trx, eventId, accountId);
    if (!event) throw new AppError('webhook_event_not_found');
    if (event.status !== 'undelivered') {
      throw new AppError('webhook_event_not_undelivered', `The event is ${event.status}; only an undelivered event can be retried.`);
    }
    if (!(await requeueUndeliveredEvent(trx, eventId, now))) throw new AppError('webhook_event_not_undelivered');
    await enqueueJobs(trx, [{ queue: 'webhook', ref: eventId, payload: { manual: true } satisfies JobPayload, runAt: now }], now);
    await recordAudit(ctx, { action: 'webhook_event.retried', accountId, target: { type: 'webhook_event', id: eventId }, changes: { status: ['undelivered', 'pending'] } }, trx);
    return { ...event, status: 'pending' as const, updated_at: now };
  });
  ctx.wake('webhook');
  return (await views(ctx, [row]))[0]!;
}
