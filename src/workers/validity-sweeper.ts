/**
 * Runs the validity-period sweep (src/services/messages/expire-validity-periods.ts) every few
 * seconds, on the one worker loop, so the workers of a process start, drain and stop it with the
 * others. Several processes sweeping at once only share the work: each change is guarded by the
 * message's status.
 */
import { exponential } from '../domain/retry-policy.ts';
import { expireValidityPeriods } from '../services/messages/expire-validity-periods.ts';
import type { Context } from '../services/context.ts';
import { WorkerLoop } from './worker-loop.ts';

const INTERVAL_MS = 5_000;

export class ValiditySweeper {
  readonly #loop: WorkerLoop;

  constructor(private readonly ctx: Context) {
    this.#loop = new WorkerLoop({
      name: 'validity',
      log: ctx.log,
      idleMs: INTERVAL_MS,
      startIdle: true,
      holdsProcess: false,
      // A failed sweep is tried again at the next interval.
      onFailure: exponential({ baseMs: INTERVAL_MS, factor: 1, maxMs: INTERVAL_MS }),
      failureMessage: 'validity sweep failed',
      // The sweep itself goes on batch after batch until nothing more has expired.
      step: async () => ({ done: await this.drain(), more: false }),
    });
  }

  start(): void {
    this.#loop.start();
  }

  wake(): void {}

  /** Expires what is due now; returns how many messages it failed. */
  drain(): Promise<number> {
    return expireValidityPeriods(this.ctx);
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }
}
