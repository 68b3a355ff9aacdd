/**
 * Stores the multi-part inbound messages whose parts stopped coming (src/services/inbound/inbound.ts,
 * `flushStaleParts`) every few seconds, so a message waits at most a little over the 60 s
 * reassembly timeout. It has the shape of a queue worker so the workers of a process start, drain
 * and stop it with the others.
 */
import { flushStaleParts } from '../services/inbound/inbound.ts';
import type { Context } from '../services/context.ts';

const INTERVAL_MS = 5_000;

export class InboundPartsSweeper {
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<unknown> | null = null;

  constructor(private readonly ctx: Context) {}

  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => {
      if (this.#running) return;
      this.#running = this.drain()
        .catch((err: unknown) => this.ctx.log.error({ err }, 'inbound parts sweep failed'))
        .finally(() => {
          this.#running = null;
        });
    }, INTERVAL_MS);
    this.#timer.unref();
  }

  wake(): void {}

  /** Stores what has timed out now; returns how many messages it stored. */
  drain(): Promise<number> {
    return flushStaleParts(this.ctx);
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#running;
  }
}
