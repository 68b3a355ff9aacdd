/**
 * Deletes expired idempotency keys (DECISIONS.md §5: kept 24 hours) on a schedule, on the one
 * worker loop. Without it a key's row would only go when the same key came back, and the table
 * would grow with every idempotent request for ever. It runs with the workers, so every
 * installation has one (each has at least one process with workers: `pigeon serve`, or
 * `pigeon worker` beside `pigeon serve --no-workers`); several sweeping at once only share the work.
 */
import { exponential } from '../domain/retry-policy.ts';
import type { Context } from '../services/context.ts';
import { deleteExpiredIdempotencyKeys } from '../store/repositories/idempotency.repository.ts';
import { WorkerLoop } from './worker-loop.ts';

const INTERVAL_MS = 5 * 60_000;
const BATCH = 1000;

export class IdempotencySweeper {
  readonly #loop: WorkerLoop;

  constructor(private readonly ctx: Context) {
    this.#loop = new WorkerLoop({
      name: 'idempotency',
      log: ctx.log,
      idleMs: INTERVAL_MS,
      startIdle: true,
      holdsProcess: false,
      // A failed sweep is tried again at the next interval.
      onFailure: exponential({ baseMs: INTERVAL_MS, factor: 1, maxMs: INTERVAL_MS }),
      failureMessage: 'idempotency key sweep failed',
      step: async () => ({ done: await this.drain(), more: false }),
    });
  }

  start(): void {
    this.#loop.start();
  }

  wake(): void {}

  /** Deletes every key expired by now, a batch at a time; returns how many. */
  async drain(): Promise<number> {
    const now = this.ctx.clock();
    let total = 0;
    for (;;) {
      const n = await deleteExpiredIdempotencyKeys(this.ctx.store.db, now, BATCH);
      total += n;
      if (n < BATCH) return total;
    }
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }
}
