/**
 * The one worker loop: run a step (claim a batch, run it, settle), again at once while there is
 * more, otherwise wait for the idle interval (or less, until the next item the step knows to be
 * due) or a wake-up; after a failure, back off by a retry policy (src/domain/retry-policy.ts);
 * stop cleanly, letting the step in hand finish. Every background loop of a process is one of
 * these: the job queues (queue-worker.ts: dispatch, receipts, mail), the scheduler
 * (scheduler.ts), the webhook sender (webhook-worker.ts) and the sweepers (expiry, validity
 * periods, idempotency keys). A new worker is a step given to this loop.
 *
 * The one loop that is not: SQLite's WAL checkpointer (src/store/checkpoint-worker.mjs) runs on a
 * thread of its own, with its own connection and timer, so that its copying and fsync never run
 * on the event loop; it does no claimed work and has nothing to settle or back off.
 */
import type { Logger } from 'pino';
import { exponential, retryDelay, type RetryPolicy } from '../domain/retry-policy.ts';
import type { Store } from '../store/connect.ts';

export interface StepResult {
  /** Items handled (jobs claimed, rows swept): drain() stops at a step that handled none. */
  done: number;
  /** Run the next step at once rather than after the idle wait. */
  more: boolean;
  /**
   * When known, how long until the next item is due (a scheduled time): the idle wait is cut to
   * it, never made longer than `idleMs` (which still catches work from other processes).
   */
  nextInMs?: number;
}

export interface WorkerLoopOptions {
  /** Names the loop in the log (`queue`). */
  name: string;
  log: Logger;
  /** The work: one claim-run-settle round. A throw counts as a failed step. */
  step: () => Promise<StepResult>;
  /** The wait when a step found nothing more to do. */
  idleMs: number;
  /**
   * After a wake-up, how long to wait before the step, so that work committed meanwhile joins
   * the same batch: at a steady rate below saturation every send would otherwise wake each stage
   * for a batch of one or two, and a batch's fixed cost (its claim, its transaction, its commit)
   * dominated the CPU per message (docs/architecture.md, "a pipeline that batches"). A full batch is
   * followed at once, without it, and so is `resume()`.
   */
  lingerMs?: number;
  /** The wait after a failed step, by failures in a row; never gives up. */
  onFailure?: RetryPolicy;
  /** What the log says when a step fails. */
  failureMessage?: string;
  /** Start with the idle wait (a sweep on a schedule) instead of a step. */
  startIdle?: boolean;
  /** Whether the idle wait keeps the process alive (a sweep on a schedule does not). */
  holdsProcess?: boolean;
  /**
   * The store the step works on: a step that fails because it is unavailable is logged at debug
   * only, since the store's condition is logged once when it starts and once a minute while it
   * lasts (src/services/availability.ts); every loop of every process at error, with a stack,
   * every few seconds, would bury that line.
   */
  store?: Store;
}

/**
 * The linger of the message pipeline's stages (dispatch, receipts, webhooks): at 1,000 sends a
 * second it cut the server's CPU per message end to end by about 30 % (20 ms and 25 ms measured
 * alike, 10 ms a little less, 50 ms no better and a worse send p99), for at most 20 ms more per
 * stage between acceptance and the delivery report.
 */
export const WORKER_LINGER_MS = 20;

/** A failed step: 200 ms, doubling, at most 5 s. */
export const STEP_FAILURE_BACKOFF: RetryPolicy = exponential({ baseMs: 200, factor: 2, maxMs: 5000 });

export class WorkerLoop {
  #running = false;
  #loop: Promise<void> | null = null;
  #wake: (() => void) | null = null;
  #woken = false;
  #linger = false;

  constructor(private readonly opts: WorkerLoopOptions) {}

  get running(): boolean {
    return this.#running;
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#loop = this.#run();
  }

  /** Skips the idle wait, after the linger: new work was committed in this process. */
  wake(): void {
    this.#linger = true;
    this.resume();
  }

  /** Skips the idle wait at once: the step itself freed room for more (its own results recorded). */
  resume(): void {
    this.#woken = true;
    this.#wake?.();
  }

  /** Lets the step in hand finish, then stops. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#wake?.();
    await this.#loop;
  }

  /** Runs steps until one handles nothing (tests, the CLI); returns how many items were handled. */
  async drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const { done } = await this.opts.step();
      total += done;
      if (done === 0) return total;
    }
  }

  async #run(): Promise<void> {
    const { log, name, step, idleMs } = this.opts;
    const backoff = this.opts.onFailure ?? STEP_FAILURE_BACKOFF;
    let failures = 0;
    if (this.opts.startIdle) {
      await this.#sleep(idleMs);
      await this.#lingerIfWoken();
    }
    while (this.#running) {
      this.#woken = false;
      this.#linger = false;
      let result: StepResult;
      try {
        result = await step();
        failures = 0;
      } catch (err) {
        failures++;
        const outage = this.opts.store?.condition.failureOf(err) ?? null;
        if (outage) log.debug({ err, queue: name, failure: outage }, this.opts.failureMessage ?? 'job batch failed');
        else log.error({ err, queue: name }, this.opts.failureMessage ?? 'job batch failed');
        await this.#sleep(retryDelay(backoff, failures) ?? idleMs);
        continue;
      }
      if (result.more) continue;
      if (!this.#woken) {
        const wait = result.nextInMs === undefined ? idleMs : Math.max(0, Math.min(idleMs, result.nextInMs));
        if (wait > 0) await this.#sleep(wait);
      }
      await this.#lingerIfWoken();
    }
  }

  async #lingerIfWoken(): Promise<void> {
    if (this.#linger && this.opts.lingerMs && this.#running) await new Promise((resolve) => setTimeout(resolve, this.opts.lingerMs));
  }

  #sleep(ms: number): Promise<void> {
    if (!this.#running) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      if (this.opts.holdsProcess === false) timer.unref();
      const self = this;
      function done() {
        clearTimeout(timer);
        self.#wake = null;
        resolve();
      }
      this.#wake = done;
    });
  }
}
