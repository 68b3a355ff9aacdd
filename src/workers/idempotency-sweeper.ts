/**
 * Deletes expired idempotency keys (DECISIONS.md §5: kept 24 hours) on a schedule. Without it a
 * key's row would only go when the same key came back, and the table would grow with every
 * idempotent request for ever. It runs with the workers, so every installation has one (each has
 * at least one process with workers: `pigeon serve`, or `pigeon worker` beside
 * `pigeon serve --no-workers`); several sweeping at once only share the work.
 */
import type { Context } from '../services/context.ts';
import { deleteExpiredIdempotencyKeys } from '../store/repositories/idempotency.repository.ts';

const INTERVAL_MS = 5 * 60_000;
const BATCH = 1000;

export class IdempotencySweeper {
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<unknown> | null = null;

  constructor(private readonly ctx: Context) {}

  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => {
      if (this.#running) return;
      this.#running = this.drain()
        .catch((err: unknown) => this.ctx.log.error({ err }, 'idempotency key sweep failed'))
        .finally(() => {
          this.#running = null;
        });
    }, INTERVAL_MS);
    this.#timer.unref();
  }

  wake(): void {}

  /** Deletes every key expired by now, a batch at a time; returns how many. */
  async drain(): Promise<number> {
    const now = this.ctx.clock();
    let total = 0;
    for (;;) {
      const n = await deleteExpiredIdempotencyKeys(this.ctx.store.db, now, BATCH);
      total += n;
      if (n < BATCH) return total;
    }
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#running;
  }
}
