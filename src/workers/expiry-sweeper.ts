/**
 * Runs the expiry sweep (src/services/messages/expire-sent-messages.ts) once a minute, on the one
 * worker loop, so the workers of a process start, drain and stop it with the others.
 */
import { exponential } from '../domain/retry-policy.ts';
import { expireSentMessages } from '../services/messages/expire-sent-messages.ts';
import type { Context } from '../services/context.ts';
import { WorkerLoop } from './worker-loop.ts';

const INTERVAL_MS = 60_000;

export class ExpirySweeper {
  readonly #loop: WorkerLoop;

  constructor(
    private readonly ctx: Context,
    private readonly validityMs: number,
  ) {
    this.#loop = new WorkerLoop({
      name: 'expiry',
      log: ctx.log,
      idleMs: INTERVAL_MS,
      startIdle: true,
      holdsProcess: false,
      // A failed sweep is tried again at the next interval.
      onFailure: exponential({ baseMs: INTERVAL_MS, factor: 1, maxMs: INTERVAL_MS }),
      failureMessage: 'expiry sweep failed',
      step: async () => ({ done: await this.#sweep(), more: false }),
    });
  }

  start(): void {
    this.#loop.start();
  }

  wake(): void {}

  /** Expires what is due now; returns how many messages it failed. */
  drain(): Promise<number> {
    return this.#sweep();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  #sweep(): Promise<number> {
    return expireSentMessages(this.ctx, this.validityMs);
  }
}
