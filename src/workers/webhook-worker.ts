/**
 * Sends webhook attempts, on the one worker loop (worker-loop.ts). Unlike the batch step of
 * queue-worker.ts, it never waits for a claimed batch's slowest member: it keeps claiming while
 * deliveries are in flight, up to a global limit, with a cap per receiving host so that a slow or
 * dead receiver holds at most its own slots. Jobs of a host at its cap are put back a little later
 * without counting an attempt, and they move further back each time (deferPolicy below), so a
 * large backlog for one host neither starves the others nor keeps the database busy.
 */
import type { Logger } from 'pino';
import type { Context } from '../services/context.ts';
import { deliveryRequest, dropStaleJobs, loadDeliveries, recordAttempts, type AttemptResult, type Delivery } from '../services/webhooks/webhook-events.ts';
import { answerInboundPost } from '../services/twilio/inbound-posts.ts';
import { claimJobs, releaseJobs } from '../store/repositories/jobs.repository.ts';
import type { JobsTable } from '../store/database.ts';
import { WebhookDispatcher, type DeliveryOutcome } from '../webhooks/dispatcher.ts';
import { exponential, retryDelay, type RetryPolicy } from '../domain/retry-policy.ts';
import { WORKER_LINGER_MS, WorkerLoop, type StepResult } from './worker-loop.ts';

export interface WebhookWorkerOptions {
  /** Attempts in flight at once, over all hosts. */
  concurrency?: number;
  /** Attempts in flight at once to one host (host name and port). */
  perHost?: number;
  /** Jobs claimed per query. */
  batchSize?: number;
  /** Poll interval when nothing is due. */
  idleMs?: number;
  /** After a wake-up, how long to wait for more events to join the batch (WorkerLoopOptions.lingerMs). */
  lingerMs?: number;
  /** The dispatcher to use (tests give one that trusts a test CA). */
  dispatcher?: WebhookDispatcher;
}

// A dead host holds at most 2 × perHost of the global limit (its running attempts and as many
// waiting in memory), so it takes eight dead hosts at once to fill it.
const DEFAULTS = { concurrency: 1024, perHost: 64, batchSize: 128, idleMs: 200 };
/** Finished attempts are recorded together once this many wait, or after this long. */
const FLUSH_SIZE = 256;
const FLUSH_DELAY_MS = 5;
const CONGESTED_PAUSE_MS = 50;
/** Jobs a claim may take beyond what the hosts busy here can hold, for hosts not busy here. */
const UNKNOWN_HOST_SHARE = 32;
const SHARE_PAUSE_MS = 100;

export class WebhookWorker {
  readonly #ctx: Context;
  readonly #log: Logger;
  readonly #dispatcher: WebhookDispatcher;
  readonly #ownsDispatcher: boolean;
  readonly #concurrency: number;
  readonly #perHost: number;
  readonly #batchSize: number;
  readonly #idleMs: number;
  readonly #leaseMs: number;

  /** Claimed and not yet recorded: the global limit counts these. */
  #inFlight = 0;
  /** Per host: attempts running, and claimed ones waiting in memory for a free slot. */
  readonly #hosts = new Map<string, { active: number; waiting: Delivery[] }>();
  /** The last attempt started per message, so a later event of the message starts after it. */
  readonly #byMessage = new Map<string, { eventId: string; done: Promise<void> }>();
  readonly #tasks = new Set<Promise<void>>();
  #results: AttemptResult[] = [];
  #flushTimer: NodeJS.Timeout | null = null;
  #flushing: Promise<void> = Promise.resolve();

  readonly #loop: WorkerLoop;
  #wideClaim = false;
  /** Until then, claims take no share for hosts not busy here. */
  #shareAfter = 0;
  #completions = 0;
  #drained: (() => void) | null = null;

  constructor(ctx: Context, opts: WebhookWorkerOptions = {}) {
    this.#ctx = ctx;
    this.#log = ctx.log;
    this.#concurrency = opts.concurrency ?? DEFAULTS.concurrency;
    this.#perHost = opts.perHost ?? DEFAULTS.perHost;
    this.#batchSize = opts.batchSize ?? DEFAULTS.batchSize;
    this.#idleMs = opts.idleMs ?? DEFAULTS.idleMs;
    // Long enough for an attempt to finish and be recorded; past it, another worker may retry the job.
    this.#leaseMs = ctx.config.webhook.timeoutMs + 60_000;
    this.#ownsDispatcher = !opts.dispatcher;
    this.#dispatcher =
      opts.dispatcher ??
      new WebhookDispatcher({ timeoutMs: ctx.config.webhook.timeoutMs, allowPrivate: ctx.config.webhook.allowPrivate, maxSocketsPerHost: this.#perHost });
    this.#loop = new WorkerLoop({ name: 'webhook', log: this.#log, store: ctx.store, idleMs: this.#idleMs, lingerMs: opts.lingerMs ?? WORKER_LINGER_MS, failureMessage: 'webhook claim failed', step: () => this.#step() });
  }

  start(): void {
    this.#loop.start();
  }

  /** Skips the idle wait: new events were committed in this process. */
  wake(): void {
    this.#loop.wake();
  }

  /** Stops claiming, lets the attempts in flight finish (bounded by the timeout) and records them. */
  async stop(): Promise<void> {
    await this.#loop.stop();
    await this.#settle();
    if (this.#ownsDispatcher) this.#dispatcher.close();
  }

  /** Sends everything due now and records the outcomes, until nothing is due (tests, CLI). */
  async drain(): Promise<number> {
    let total = 0;
    for (;;) {
      // Whole batches: drain() must not stop while anything is due.
      this.#wideClaim = true;
      const n = (await this.#claimAndStart()).claimed;
      await this.#settle();
      total += n;
      if (n === 0) return total;
    }
  }

  /** Waits until every started attempt has finished and been recorded. */
  async #settle(): Promise<void> {
    while (this.#tasks.size > 0) await Promise.all([...this.#tasks]);
    await this.#flush();
  }

  /**
   * One step of the loop: claim what there is room for and start it. Mostly put back (the busy
   * hosts are full, and claiming again at once would only move rows back and forth): wait until
   * one of them has drained a little. If no attempt at all finished meanwhile (dead hosts), the
   * next claim takes a whole batch, so that a large backlog of a dead host at the head of the queue
   * is pushed aside quickly and the hosts behind it are reached. Otherwise claim again at once
   * while there is room and more may be due; the loop waits for a finished attempt, a wake-up, or
   * the poll interval.
   */
  async #step(): Promise<StepResult> {
    const room = this.#concurrency - this.#inFlight;
    const claim = room > 0 ? await this.#claimAndStart() : { claimed: 0, requested: 0, congested: false };
    if (claim.congested) {
      const before = this.#completions;
      const drained = await this.#waitForDrain(CONGESTED_PAUSE_MS);
      this.#wideClaim = !drained && this.#completions === before;
      return { done: claim.claimed, more: true };
    }
    return { done: claim.claimed, more: claim.claimed > 0 && claim.claimed === claim.requested && this.#inFlight < this.#concurrency };
  }

  /**
   * Claims what there is room for and starts it. A claim asks for no more than the busy hosts can
   * still hold plus a fixed share for hosts not busy here, so a single full host costs a small
   * round trip of rows per claim, not a whole batch. `congested` means most of the claim went back
   * because its hosts were full.
   */
  async #claimAndStart(): Promise<{ claimed: number; requested: number; congested: boolean }> {
    // The share for other hosts is skipped for a while after a claim found a full host: the next
    // rows are likely that host's too.
    const now = this.#ctx.clock();
    let headroom = now < this.#shareAfter ? 0 : UNKNOWN_HOST_SHARE;
    for (const slot of this.#hosts.values()) headroom += Math.max(0, this.#perHost * 2 - slot.active - slot.waiting.length);
    const room = this.#concurrency - this.#inFlight;
    const requested = Math.min(this.#batchSize, this.#wideClaim ? this.#batchSize : headroom, room);
    this.#wideClaim = false;
    if (requested <= 0) return { claimed: 0, requested, congested: room > 0 };
    const ctx = this.#ctx;
    const jobs = await claimJobs(ctx.store.db, 'webhook', requested, now, this.#leaseMs);
    if (jobs.length === 0) return { claimed: 0, requested, congested: false };
    this.#inFlight += jobs.length;
    let started = 0;
    let full = 0;
    try {
      const { deliveries, stale, earlierUnattempted } = await loadDeliveries(ctx, jobs);
      const startedHere = new Set<string>();
      const deferred: JobsTable[] = [];
      const byId = new Map(jobs.map((j) => [j.id, j]));
      for (const d of deliveries) {
        const host = hostOf(d.event.url);
        // An earlier event of the message that nobody here is sending is being sent elsewhere (or
        // its job is not due yet): wait for its first attempt rather than overtake it.
        const waitsElsewhere = (earlierUnattempted.get(d.event.id) ?? []).some(
          (id) => !startedHere.has(id) && this.#byMessage.get(orderKey(d))?.eventId !== id,
        );
        const slot = this.#hosts.get(host) ?? { active: 0, waiting: [] };
        this.#hosts.set(host, slot);
        // A busy host keeps a short queue in memory (its leases outlast it); beyond that, its jobs go
        // back to the table so that they hold no room the other hosts could use.
        const hostFull = slot.active >= this.#perHost && slot.waiting.length >= this.#perHost;
        if (waitsElsewhere || hostFull) {
          if (hostFull) full++;
          if (slot.active === 0) this.#hosts.delete(host);
          deferred.push(byId.get(d.jobId)!);
          continue;
        }
        if (slot.active < this.#perHost) this.#start(d, host);
        else slot.waiting.push(d);
        startedHere.add(d.event.id);
        started++;
      }
      if (stale.length > 0) await dropStaleJobs(ctx, stale);
      await this.#defer(deferred, now);
    } catch (err) {
      // Nothing of the unstarted part will run: give those jobs back now rather than after the lease.
      this.#inFlight -= jobs.length - started;
      throw err;
    }
    this.#inFlight -= jobs.length - started;
    if (full > 0) this.#shareAfter = now + SHARE_PAUSE_MS;
    return { claimed: jobs.length, requested, congested: full * 2 > jobs.length };
  }

  /**
   * Puts jobs back without counting an attempt. Each deferral of the same job waits longer
   * (0.4 s, 1.6 s, 6.4 s, ... by the job's claim count), with jitter so that the backlog of a slow
   * host comes back spread out rather than all at once.
   */
  async #defer(jobs: JobsTable[], now: number): Promise<void> {
    if (jobs.length === 0) return;
    const policy = deferPolicy(this.#ctx.config.webhook.timeoutMs);
    const groups = new Map<number, string[]>();
    for (const j of jobs) groups.set(j.attempts, [...(groups.get(j.attempts) ?? []), j.id]);
    for (const [claims, ids] of groups) {
      await releaseJobs(this.#ctx.store.db, ids, now + retryDelay(policy, Math.max(1, claims))!);
    }
  }

  #start(d: Delivery, host: string): void {
    const slot = this.#hosts.get(host)!;
    slot.active++;
    const previous = this.#byMessage.get(orderKey(d));
    const task = (async () => {
      // A later event of the same message starts only once the earlier attempt has finished.
      if (previous) await previous.done;
      const attemptedAt = this.#ctx.clock();
      const outcome = await this.#dispatcher.deliver(deliveryRequest(d, attemptedAt));
      // A TwiML answer is acted on before the attempt is recorded: if the process dies between
      // the two, the post is made again and may be answered again (at least once, as every event).
      if (outcome.answer !== undefined) {
        await answerInboundPost(this.#ctx, d.event, outcome.answer).catch((err: unknown) => this.#log.error({ err, eventId: d.event.id }, 'TwiML answer failed'));
        delete outcome.answer;
      }
      this.#completions++;
      if (!outcome.ok) this.#logFailure(d, outcome);
      this.#results.push({ delivery: d, attemptedAt, outcome });
      this.#scheduleFlush();
      slot.active--;
      // Started before this task ends, so that drain() and stop() see it.
      const next = slot.waiting.shift();
      if (next) this.#start(next, host);
      else if (slot.active === 0) this.#hosts.delete(host);
      if (slot.waiting.length < this.#perHost / 2) this.#drained?.();
    })();
    const entry = { eventId: d.event.id, done: task.catch(() => {}) };
    this.#byMessage.set(orderKey(d), entry);
    this.#tasks.add(task);
    task
      .catch((err) => this.#log.error({ err, eventId: d.event.id }, 'webhook attempt crashed'))
      .finally(() => {
        this.#tasks.delete(task);
        if (this.#byMessage.get(orderKey(d)) === entry) this.#byMessage.delete(orderKey(d));
      });
  }

  /**
   * A failed or refused attempt at warn, with the reason.
   */
  #logFailure(d: Delivery, outcome: DeliveryOutcome): void {
    const refused = outcome.error?.startsWith('refused') ?? false;
    this.#log.warn(
      {
        eventId: d.event.id,
        messageId: d.event.message_id,
        accountId: d.account.id,
        url: safeUrl(d.event.url),
        httpStatus: outcome.httpStatus,
        reason: outcome.error,
        latencyMs: outcome.latencyMs,
      },
      refused
        ? `webhook refused: ${outcome.error}`
        : `webhook attempt failed: ${outcome.error}${outcome.error?.startsWith('TLS failure') ? ' (a receiver with its own CA needs NODE_EXTRA_CA_CERTS at start)' : ''}`,
    );
  }

  #scheduleFlush(): void {
    if (this.#results.length >= FLUSH_SIZE) {
      void this.#flush();
      return;
    }
    this.#flushTimer ??= setTimeout(() => void this.#flush(), FLUSH_DELAY_MS);
  }

  /** Records the finished attempts; one flush at a time, in order. */
  #flush(): Promise<void> {
    if (this.#flushTimer) {
      clearTimeout(this.#flushTimer);
      this.#flushTimer = null;
    }
    this.#flushing = this.#flushing.then(async () => {
      const batch = this.#results;
      if (batch.length === 0) return;
      this.#results = [];
      try {
        await recordAttempts(this.#ctx, batch);
      } catch (err) {
        // The jobs stay leased; when the lease ends the attempts are made again (at least once).
        this.#log.error({ err, count: batch.length }, 'recording webhook attempts failed');
      } finally {
        this.#inFlight -= batch.length;
        this.#loop.resume();
      }
    });
    return this.#flushing;
  }

  /** True when a busy host drained below its in-memory queue's half before `ms` passed. */
  #waitForDrain(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(false), ms);
      const done = (drained: boolean) => {
        clearTimeout(timer);
        this.#drained = null;
        resolve(drained);
      };
      this.#drained = () => done(true);
    });
  }
}

/**
 * How far a job of a full host is put back, by its claim count: 400 ms, four times more each time,
 * up to six attempt timeouts (30 s by default; a dead host's backlog returns a few times a minute
 * instead of being claimed over and over while its slots are held), ±25 %.
 */
export function deferPolicy(timeoutMs: number): RetryPolicy {
  return exponential({ baseMs: 400, factor: 4, maxMs: Math.min(Math.max(1000, timeoutMs * 6), 100 * 4 ** 8), jitter: 0.25 });
}

/** The URL for the log: without user information or query string, which may carry credentials. */
function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(not a URL)';
  }
}

function hostOf(url: string): string {
  try {
    return new URL(url).host.toLowerCase();
  } catch {
    return '';
  }
}

/**
 * The events kept in order with each other: a message's delivery events, or an inbound message's
 * account events (its sms.received before the opt-out it caused); any other event stands alone.
 */
function orderKey(d: Delivery): string {
  return d.event.message_id ?? d.event.inbound_id ?? d.event.id;
}
