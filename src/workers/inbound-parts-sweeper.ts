/**
 * Stores the multi-part inbound messages whose parts stopped coming (src/services/inbound/inbound.ts,
 * `flushStaleParts`) every few seconds, on the one worker loop, so a message waits at most a
 * little over the 60 s reassembly timeout, and the workers of a process start, drain and stop it
 * with the others.
 */
import { exponential } from '../domain/retry-policy.ts';
import { flushStaleParts } from '../services/inbound/inbound.ts';
import type { Context } from '../services/context.ts';
import { WorkerLoop } from './worker-loop.ts';

const INTERVAL_MS = 5_000;

export class InboundPartsSweeper {
  readonly #loop: WorkerLoop;

  constructor(private readonly ctx: Context) {
    this.#loop = new WorkerLoop({
      name: 'inbound-parts',
      log: ctx.log,
      idleMs: INTERVAL_MS,
      startIdle: true,
      holdsProcess: false,
      // A failed sweep is tried again at the next interval.
      onFailure: exponential({ baseMs: INTERVAL_MS, factor: 1, maxMs: INTERVAL_MS }),
      failureMessage: 'inbound parts sweep failed',
      step: async () => ({ done: await this.drain(), more: false }),
    });
  }

  start(): void {
    this.#loop.start();
  }

  wake(): void {}

  /** Stores what has timed out now; returns how many messages it stored. */
  drain(): Promise<number> {
    return flushStaleParts(this.ctx);
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }
}
