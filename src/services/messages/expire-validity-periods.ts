/**
 * A message sent with `validity_period` (DECISIONS.md §8) that is not dispatched within it, or
 * whose receipt does not come within it, ends `failed` with `expired`: refunded if it was never
 * `sent` (applyStatusChange refunds every `pending` → `failed`), not if it left. Dispatch refuses
 * an expired message too (dispatch-messages.ts); this sweep catches the ones waiting in the queue
 * or for a receipt.
 */
import { applyStatusChange, enqueueFollowUps } from './message-status-changes.ts';
import type { NewJob } from '../../store/repositories/jobs.repository.ts';
import { expiredMessages } from '../../store/repositories/messages.repository.ts';
import type { Context } from '../context.ts';

const BATCH = 500;

const REASONS = {
  pending: 'The validity period ended before the message could be dispatched.',
  sent: 'No delivery receipt arrived within the validity period.',
} as const;

/** Fails the messages whose validity period ended; returns how many. */
export async function expireValidityPeriods(ctx: Context): Promise<number> {
  let total = 0;
  for (const status of ['pending', 'sent'] as const) {
    for (;;) {
      const now = ctx.clock();
      const due = await expiredMessages(ctx.store.db, status, now, BATCH);
      if (due.length === 0) break;
      const followUps: NewJob[] = [];
      // Refunds lock account rows: in account order, as acceptance and dispatch lock them.
      due.sort((a, b) => (a.account_id < b.account_id ? -1 : a.account_id > b.account_id ? 1 : 0));
      await ctx.store.db.transaction().execute(async (trx) => {
        for (const message of due) {
          const next = await applyStatusChange(trx, message, { to: 'failed', at: now, errorCode: 'expired', errorMessage: REASONS[status] }, now, followUps);
          if (next) total++;
        }
        await enqueueFollowUps(trx, followUps, now);
      });
      if (followUps.length > 0) ctx.wake('webhook');
      if (due.length < BATCH) break;
    }
  }
  return total;
}
