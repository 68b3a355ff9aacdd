/**
 * Runs the expiry sweep (src/services/messages/expire-sent-messages.ts) once a minute. It has the shape of
 * a queue worker so the workers of a process start, drain and stop it with the others.
 */
import { expireSentMessages } from '../services/messages/expire-sent-messages.ts';
import type { Context } from '../services/context.ts';

const INTERVAL_MS = 60_000;

export class ExpirySweeper {
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<unknown> | null = null;

  constructor(
    private readonly ctx: Context,
    private readonly validityMs: number,
  ) {}

  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => {
      if (this.#running) return;
      this.#running = this.drain()
        .catch((err: unknown) => this.ctx.log.error({ err }, 'expiry sweep failed'))
        .finally(() => {
          this.#running = null;
        });
    }, INTERVAL_MS);
    this.#timer.unref();
  }

  wake(): void {}

  /** Expires what is due now; returns how many messages it failed. */
  drain(): Promise<number> {
    return expireSentMessages(this.ctx, this.validityMs);
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#running;
  }
}
