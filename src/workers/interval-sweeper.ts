/**
 * A sweep run every `intervalMs` on the one worker loop (worker-loop.ts), so the workers of a
 * process start, drain and stop it with the others: the first run one interval after start, a
 * failed run tried again at the next interval, and never the reason a process stays alive.
 * The idempotency-key, validity-period, SMPP expiry and inbound-parts sweepers are each one.
 * Several processes sweeping at once only share the work: each sweep's changes are guarded in
 * its own statements.
 */
import { exponential } from '../domain/retry-policy.ts';
import type { Context } from '../services/context.ts';
import { WorkerLoop } from './worker-loop.ts';

export interface IntervalSweep {
  name: string;
  intervalMs: number;
  /** Logged with the error when a run fails. */
  failureMessage: string;
  /** Runs the first sweep at start rather than one interval later (default false). */
  atStart?: boolean;
  /** Does what is due now; returns how many items it handled. */
  sweep: () => Promise<number>;
}

export class IntervalSweeper {
  readonly #loop: WorkerLoop;
  readonly #sweep: () => Promise<number>;

  constructor(ctx: Context, opts: IntervalSweep) {
    this.#sweep = opts.sweep;
    this.#loop = new WorkerLoop({
      name: opts.name,
      log: ctx.log,
      store: ctx.store,
      idleMs: opts.intervalMs,
      startIdle: opts.atStart !== true,
      holdsProcess: false,
      onFailure: exponential({ baseMs: opts.intervalMs, factor: 1, maxMs: opts.intervalMs }),
      failureMessage: opts.failureMessage,
      step: async () => ({ done: await this.#sweep(), more: false }),
    });
  }

  start(): void {
    this.#loop.start();
  }

  wake(): void {}

  /** Runs the sweep now; returns how many items it handled. */
  drain(): Promise<number> {
    return this.#sweep();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }
}
