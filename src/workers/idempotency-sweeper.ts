/**
 * Deletes expired idempotency keys (DECISIONS.md §5: kept 24 hours) on a schedule, on the one
 * worker loop. Without it a key's row would only go when the same key came back, and the table
 * would grow with every idempotent request for ever. It runs with the workers, so every
 * installation has one (each has at least one process with workers: `pigeon serve`, or
 * `pigeon worker` beside `pigeon serve --no-workers`); several sweeping at once only share the work.
 */
import type { Context } from '../services/context.ts';
import { deleteExpiredIdempotencyKeys } from '../store/repositories/idempotency.repository.ts';
import { IntervalSweeper } from './interval-sweeper.ts';

const BATCH = 1000;

export class IdempotencySweeper extends IntervalSweeper {
  constructor(ctx: Context) {
    super(ctx, {
      name: 'idempotency',
      intervalMs: 5 * 60_000,
      failureMessage: 'idempotency key sweep failed',
      // Every key expired by now, a batch at a time, so no statement holds the write lock long.
      sweep: async () => {
        const now = ctx.clock();
        let total = 0;
        for (;;) {
          const n = await deleteExpiredIdempotencyKeys(ctx.store.db, now, BATCH);
          total += n;
          if (n < BATCH) return total;
        }
      },
    });
  }
}
