/**
 * Releases scheduled messages when they are due (src/services/messages/release-scheduled.ts), on
 * the one worker loop (worker-loop.ts), and stages their dispatch jobs shortly before. While
 * messages are due it releases batch after batch without pausing; otherwise it sleeps until the next message is due, or at most `idleMs` (to see
 * messages other processes scheduled), so a release starts within that long of its time; a
 * message scheduled in this process wakes it to look again. Any number of schedulers, in any
 * number of processes, share the work: the release is exactly-once by construction.
 */
import type { Context } from '../services/context.ts';
import { msUntilNextRelease, releaseScheduledMessages, releaseSlices, stageUpcomingDispatch, type ReleaseSummary } from '../services/messages/release-scheduled.ts';
import type { DueKey } from '../store/repositories/scheduled-messages.repository.ts';
import { WorkerLoop, type StepResult } from './worker-loop.ts';

export interface SchedulerOptions {
  /** Messages released per transaction. */
  batchSize?: number;
  /** Longest sleep when nothing is due. */
  idleMs?: number;
  /**
   * Releases run side by side, each on its own slice of the due messages and in its own
   * transaction. On PostgreSQL a release is mostly index maintenance on the server, and two keep
   * it busier than one; SQLite has one writer.
   */
  parallel?: number;
  /** Called after each release that moved messages (metrics, the benchmark). */
  onRelease?: (summary: ReleaseSummary) => void;
}

const DEFAULTS = { batchSize: 5000, idleMs: 250 };

export class Scheduler {
  readonly #batchSize: number;
  readonly #parallel: number;
  readonly #onRelease: ((summary: ReleaseSummary) => void) | undefined;
  readonly #loop: WorkerLoop;
  /** The last message whose dispatch job this scheduler staged, in due order. */
  #staged: DueKey | undefined;

  constructor(
    private readonly ctx: Context,
    opts: SchedulerOptions = {},
  ) {
    this.#batchSize = opts.batchSize ?? DEFAULTS.batchSize;
    this.#onRelease = opts.onRelease;
    this.#parallel = Math.max(1, opts.parallel ?? (ctx.store.dialect === 'postgres' ? 2 : 1));
    const idleMs = opts.idleMs ?? DEFAULTS.idleMs;
    this.#loop = new WorkerLoop({ name: 'schedule', log: ctx.log, store: ctx.store, idleMs, failureMessage: 'scheduled release failed', step: () => this.#step() });
  }

  start(): void {
    this.#loop.start();
  }

  /** A message was scheduled in this process: look again for the next due time. */
  wake(): void {
    this.#loop.wake();
  }

  /** Releases everything due now (tests, CLI); returns how many messages left `scheduled`. */
  async drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const { claimed, full } = await this.#release();
      total += claimed;
      if (!full) return total;
    }
  }

  /** Finishes the batches in hand, then stops. */
  async stop(): Promise<void> {
    await this.#loop.stop();
  }

  /**
   * One round of batches; when none was full, a batch of dispatch jobs staged for the messages due
   * next, and how long until the next message is due. Releases come first: they are late if slow.
   */
  async #step(): Promise<StepResult> {
    const { claimed, full } = await this.#release();
    if (full) return { done: claimed, more: true };
    const staged = await stageUpcomingDispatch(this.ctx, this.#staged, this.#batchSize);
    if (staged.last) this.#staged = staged.last;
    if (staged.looked >= this.#batchSize) return { done: claimed + staged.looked, more: true };
    const next = await msUntilNextRelease(this.ctx);
    return { done: claimed + staged.looked, more: false, nextInMs: next ?? undefined };
  }

  /** A batch per slice of the due messages, side by side; whether any batch was full. */
  async #release(): Promise<{ claimed: number; full: boolean }> {
    const slices = await releaseSlices(this.ctx, this.#batchSize, this.#parallel);
    // Settled, not raced: a failed slice's error is raised once all are finished, so that `stop`
    // never returns while a transaction is still in flight.
    const settled = await Promise.allSettled(slices.map((range) => releaseScheduledMessages(this.ctx, this.#batchSize, range)));
    let claimed = 0;
    let full = false;
    for (const result of settled) {
      if (result.status === 'rejected') continue;
      if (result.value.claimed > 0) this.#onRelease?.(result.value);
      claimed += result.value.claimed;
      full ||= result.value.claimed >= this.#batchSize;
    }
    const failed = settled.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    return { claimed, full };
  }
}
