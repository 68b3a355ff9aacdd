/**
 * Fails the sent messages whose receipt did not come within the carrier's validity
 * (src/services/messages/expire-sent-messages.ts), once a minute.
 */
import { expireSentMessages } from '../services/messages/expire-sent-messages.ts';
import type { Context } from '../services/context.ts';
import { IntervalSweeper } from './interval-sweeper.ts';

export class ExpirySweeper extends IntervalSweeper {
  constructor(ctx: Context, validityMs: number) {
    super(ctx, { name: 'expiry', intervalMs: 60_000, failureMessage: 'expiry sweep failed', sweep: () => expireSentMessages(ctx, validityMs) });
  }
}
