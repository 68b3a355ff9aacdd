/**
 * Runs the validity-period sweep (src/services/messages/expire-validity-periods.ts) every few
 * seconds, with the start/wake/drain/stop shape of the other workers. Several processes sweeping
 * at once only share the work: each change is guarded by the message's status.
 */
import { expireValidityPeriods } from '../services/messages/expire-validity-periods.ts';
import type { Context } from '../services/context.ts';

const INTERVAL_MS = 5_000;

export class ValiditySweeper {
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<unknown> | null = null;

  constructor(private readonly ctx: Context) {}

  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => {
      if (this.#running) return;
      this.#running = this.drain()
        .catch((err: unknown) => this.ctx.log.error({ err }, 'validity sweep failed'))
        .finally(() => {
          this.#running = null;
        });
    }, INTERVAL_MS);
    this.#timer.unref();
  }

  wake(): void {}

  /** Expires what is due now; returns how many messages it failed. */
  drain(): Promise<number> {
    return expireValidityPeriods(this.ctx);
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#running;
  }
}
