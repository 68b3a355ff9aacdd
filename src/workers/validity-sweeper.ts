/**
 * Fails the messages whose validity period ended (src/services/messages/expire-validity-periods.ts),
 * every 5 s.
 */
import { expireValidityPeriods } from '../services/messages/expire-validity-periods.ts';
import type { Context } from '../services/context.ts';
import { IntervalSweeper } from './interval-sweeper.ts';

export class ValiditySweeper extends IntervalSweeper {
  constructor(ctx: Context) {
    super(ctx, { name: 'validity', intervalMs: 5_000, failureMessage: 'validity sweep failed', sweep: () => expireValidityPeriods(ctx) });
  }
}
