/**
 * Releases scheduled messages when they are due (src/services/messages/release-scheduled.ts).
 * Self-contained, with the start/wake/drain/stop shape of the other workers. While messages are
 * due it releases batch after batch without pausing; otherwise it sleeps until the next message
 * is due, or at most `idleMs` (to see messages other processes scheduled), so a release starts
 * within that long of its time. Any number of schedulers, in any number of processes, share the
 * work: the release is exactly-once by construction.
 */
import type { Context } from '../services/context.ts';
import { releaseScheduledMessages, type ReleaseSummary } from '../services/messages/release-scheduled.ts';
import { nextSendAt } from '../store/repositories/scheduled-messages.repository.ts';

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
  readonly #idleMs: number;
  readonly #loops: number;
  readonly #onRelease: ((summary: ReleaseSummary) => void) | undefined;
  #running = false;
  #loopRuns: Promise<void>[] = [];
  readonly #wakes = new Set<() => void>();
  #woken = false;

  constructor(
    private readonly ctx: Context,
    opts: SchedulerOptions = {},
  ) {
    this.#batchSize = opts.batchSize ?? DEFAULTS.batchSize;
    this.#idleMs = opts.idleMs ?? DEFAULTS.idleMs;
    this.#loops = opts.loops ?? (ctx.store.dialect === 'postgres' ? 2 : 1);
    this.#onRelease = opts.onRelease;
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#loopRuns = Array.from({ length: this.#loops }, () => this.#run());
  }

  /** A message was scheduled in this process: look again for the next due time. */
  wake(): void {
    this.#woken = true;
    for (const wake of this.#wakes) wake();
  }

  /** Releases everything due now (tests, CLI); returns how many messages left `scheduled`. */
  async drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const summary = await releaseScheduledMessages(this.ctx, this.#batchSize);
      if (summary.claimed > 0) this.#onRelease?.(summary);
      const { claimed } = summary;
      total += claimed;
      if (claimed < this.#batchSize) return total;
    }
  }

  /** Finishes the batch in hand, then stops. */
  async stop(): Promise<void> {
    this.#running = false;
    for (const wake of this.#wakes) wake();
    await Promise.all(this.#loopRuns);
  }

  async #run(): Promise<void> {
    let failures = 0;
    while (this.#running) {
      this.#woken = false;
      try {
        const summary = await releaseScheduledMessages(this.ctx, this.#batchSize);
        if (summary.claimed > 0) this.#onRelease?.(summary);
        const { claimed } = summary;
        failures = 0;
        if (claimed === this.#batchSize) continue;
        if (this.#woken) continue;
        const next = await nextSendAt(this.ctx.store.db);
        const wait = next === null ? this.#idleMs : Math.max(0, Math.min(this.#idleMs, next - this.ctx.clock()));
        if (wait > 0 && !this.#woken) await this.#sleep(wait);
      } catch (err) {
        failures++;
        this.ctx.log.error({ err }, 'scheduled release failed');
        await this.#sleep(Math.min(5000, 100 * 2 ** failures));
      }
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const wakes = this.#wakes;
      function done() {
        clearTimeout(timer);
        wakes.delete(done);
        resolve();
      }
      wakes.add(done);
    });
  }
}
