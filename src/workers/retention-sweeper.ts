/**
 * The retention purge (src/services/retention/purge.ts) every 15 minutes, and the pending
 * erasures every 10 seconds, on the one worker loop. The purge works in short batches and yields
 * between them, so sends go on beside it; several processes purging at once only share the work
 * (a row is counted into the daily totals by the transaction that deletes it, which only one can).
 */
import type { Context } from '../services/context.ts';
import { runErasures } from '../services/retention/erasures.ts';
import { purgeDue } from '../services/retention/purge.ts';
import { IntervalSweeper } from './interval-sweeper.ts';

const PURGE_INTERVAL_MS = 15 * 60_000;

export class RetentionSweeper extends IntervalSweeper {
  constructor(ctx: Context) {
    // At most once per interval of the context's clock, also when the workers are drained by hand
    // (tests, `drain`): a purge reads every account, and nothing becomes due faster than that.
    let last: number | null = null;
    const sweep = async () => {
      const now = ctx.clock();
      if (last !== null && now - last < PURGE_INTERVAL_MS) return 0;
      last = now;
      return purgeDue(ctx);
    };
    super(ctx, { name: 'retention', intervalMs: PURGE_INTERVAL_MS, atStart: true, failureMessage: 'retention purge failed', sweep });
  }
}

export class ErasureSweeper extends IntervalSweeper {
  constructor(ctx: Context) {
    super(ctx, { name: 'erasure', intervalMs: 10_000, failureMessage: 'erasure failed', sweep: () => runErasures(ctx) });
  }
}
