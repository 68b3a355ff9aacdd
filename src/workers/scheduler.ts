/**
 * Releases scheduled messages when they are due (src/services/messages/release-scheduled.ts), on
 * the one worker loop (worker-loop.ts). While messages are due it releases batch after batch
 * without pausing; otherwise it sleeps until the next message is due, or at most `idleMs` (to see
 * messages other processes scheduled), so a release starts within that long of its time; a
 * message scheduled in this process wakes it to look again. Any number of schedulers, in any
 * number of processes, share the work: the release is exactly-once by construction.
 */
import type { Context } from '../services/context.ts';
import { msUntilNextRelease, releaseScheduledMessages, type ReleaseSummary } from '../services/messages/release-scheduled.ts';
import { WorkerLoop, type StepResult } from './worker-loop.ts';

export interface SchedulerOptions {
  /** Messages released per transaction. */
  batchSize?: number;
  /** Longest sleep when nothing is due. */
  idleMs?: number;
  /**
   * Release loops run at once. On PostgreSQL a release is mostly index maintenance on the server,
   * and two loops (taking disjoint batches with SKIP LOCKED) keep it busier; SQLite has one writer.
   */
  loops?: number;
  /** Called after each release that moved messages (metrics, the benchmark). */
  onRelease?: (summary: ReleaseSummary) => void;
}

const DEFAULTS = { batchSize: 5000, idleMs: 250 };

export class Scheduler {
  readonly #batchSize: number;
  readonly #onRelease: ((summary: ReleaseSummary) => void) | undefined;
  readonly #loops: WorkerLoop[];

  constructor(
    private readonly ctx: Context,
    opts: SchedulerOptions = {},
  ) {
    this.#batchSize = opts.batchSize ?? DEFAULTS.batchSize;
    this.#onRelease = opts.onRelease;
    const idleMs = opts.idleMs ?? DEFAULTS.idleMs;
    const count = opts.loops ?? (ctx.store.dialect === 'postgres' ? 2 : 1);
    this.#loops = Array.from(
      { length: count },
      () => new WorkerLoop({ name: 'schedule', log: ctx.log, idleMs, failureMessage: 'scheduled release failed', step: () => this.#step() }),
    );
  }

  start(): void {
    for (const loop of this.#loops) loop.start();
  }

  /** A message was scheduled in this process: look again for the next due time. */
  wake(): void {
    for (const loop of this.#loops) loop.wake();
  }

  /** Releases everything due now (tests, CLI); returns how many messages left `scheduled`. */
  async drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const claimed = await this.#release();
      total += claimed;
      if (claimed < this.#batchSize) return total;
    }
  }

  /** Finishes the batch in hand, then stops. */
  async stop(): Promise<void> {
    await Promise.all(this.#loops.map((loop) => loop.stop()));
  }

  /** One batch; when it was not full, how long until the next message is due. */
  async #step(): Promise<StepResult> {
    const claimed = await this.#release();
    if (claimed >= this.#batchSize) return { done: claimed, more: true };
    const next = await msUntilNextRelease(this.ctx);
    return { done: claimed, more: false, nextInMs: next ?? undefined };
  }

  async #release(): Promise<number> {
    const summary = await releaseScheduledMessages(this.ctx, this.#batchSize);
    if (summary.claimed > 0) this.#onRelease?.(summary);
    return summary.claimed;
  }
}
