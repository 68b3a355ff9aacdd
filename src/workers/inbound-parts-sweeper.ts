/**
 * Stores the multi-part inbound messages whose parts stopped coming (src/services/inbound/inbound.ts,
 * `flushStaleParts`) every 5 s, so a message waits at most a little over the 60 s reassembly
 * timeout.
 */
import { flushStaleParts } from '../services/inbound/inbound.ts';
import type { Context } from '../services/context.ts';
import { IntervalSweeper } from './interval-sweeper.ts';

export class InboundPartsSweeper extends IntervalSweeper {
  constructor(ctx: Context) {
    super(ctx, { name: 'inbound-parts', intervalMs: 5_000, failureMessage: 'inbound parts sweep failed', sweep: () => flushStaleParts(ctx) });
  }
}
