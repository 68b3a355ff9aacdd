/**
 * A `sent` message whose receipt never came is not left `sent` for ever: past the validity period
 * (SMPP_VALIDITY_HOURS, 48 h by default) the SMSC has given up on it too, so it becomes `failed`
 * with `expired`, through applyStatusChange so the `sms.failed` event is written. No refund: it
 * left Pigeon (DECISIONS.md §2 refunds only what was refused before it was `sent`).
 */
import { applyStatusChange, enqueueFollowUps } from './message-status-changes.ts';
import type { NewJob } from '../../store/repositories/jobs.repository.ts';
import { staleSentMessages } from '../../store/repositories/messages.repository.ts';
import type { Context } from '../context.ts';

const BATCH = 500;

/** Fails `sent` messages older than the validity period; returns how many. */
export async function expireSentMessages(ctx: Context, validityMs: number): Promise<number> {
  let total = 0;
  for (;;) {
    const now = ctx.clock();
    const cutoff = now - validityMs;
    const stale = await staleSentMessages(ctx.store.db, cutoff, BATCH);
    if (stale.length === 0) return total;
    const followUps: NewJob[] = [];
    const hours = Math.round(validityMs / 3_600_000);
    await ctx.store.db.transaction().execute(async (trx) => {
      for (const message of stale) {
        const next = await applyStatusChange(
          trx,
          message,
          { to: 'failed', at: now, errorCode: 'expired', errorMessage: `No delivery receipt arrived within the validity period (${hours} h).` },
          now,
          followUps,
        );
        if (next) total++;
      }
      await enqueueFollowUps(trx, followUps, now);
    });
    if (followUps.length > 0) ctx.wake('webhook');
    if (stale.length < BATCH) return total;
  }
}
