import type { Context } from '../services/context.ts';
import { expireVerifications } from '../services/verify/verify.ts';
import { IntervalSweeper } from './interval-sweeper.ts';

/**
 * Pending verifications past their lifetime become `expired`, each with its
 * `verification.expired` event. Reads of a verification settle its expiry too, so a client never
 * sees a pending one past its time between sweeps.
 */
export class VerifySweeper extends IntervalSweeper {
  constructor(ctx: Context) {
    super(ctx, { name: 'verify', intervalMs: 5_000, failureMessage: 'verification expiry sweep failed', sweep: () => expireVerifications(ctx) });
  }
}
