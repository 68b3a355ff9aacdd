/**
 * Per-account request rate limit: a fixed window of `RATE_LIMIT_WINDOW_MS` allowing
 * `RATE_LIMIT_MAX` requests. The counter store is an interface so that a shared store (Redis)
 * can replace the in-process one when several API processes serve the same accounts. A service
 * of its own: the HTTP API and the SMPP listener count an account's requests in the same windows.
 */
import { AppError } from '../../errors/catalogue.ts';

export interface RateLimitStore {
  /** Counts one hit for `key` in the window that contains `now`; returns the count and the window's end. */
  hit(key: string, windowMs: number, now: number): Promise<{ count: number; resetAt: number }>;
}

/** What one window costs besides its key. */
const WINDOW_OVERHEAD_BYTES = 120;

/**
 * Windows live in memory, so their number and size are bounded: a client can make a key per
 * address it owns (IPv6 gives it many). Past `maxEntries` windows or `maxBytes` of keys, the ended
 * windows go first, then the oldest ones: forgetting a window can only start its key afresh.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  #windows = new Map<string, { count: number; resetAt: number }>();
  #bytes = 0;
  #sweptAt = 0;

  constructor(
    private readonly maxEntries = 100_000,
    private readonly maxBytes = 16 * 1024 * 1024,
  ) {}

  async hit(key: string, windowMs: number, now: number) {
    if (now - this.#sweptAt > 60_000) this.#sweep(now);
    let w = this.#windows.get(key);
    if (!w || w.resetAt <= now) {
      if (!w) this.#makeRoom(now, 2 * key.length + WINDOW_OVERHEAD_BYTES);
      w = { count: 0, resetAt: now - (now % windowMs) + windowMs };
      this.#windows.set(key, w);
    }
    w.count++;
    return { count: w.count, resetAt: w.resetAt };
  }

  /** Windows kept, for tests. */
  get size(): number {
    return this.#windows.size;
  }

  #makeRoom(now: number, bytes: number) {
    this.#bytes += bytes;
    if (this.#windows.size < this.maxEntries && this.#bytes <= this.maxBytes) return;
    this.#sweep(now);
    for (const key of this.#windows.keys()) {
      if (this.#windows.size < this.maxEntries && this.#bytes <= this.maxBytes) break;
      this.#delete(key);
    }
  }

  #delete(key: string) {
    if (this.#windows.delete(key)) this.#bytes -= 2 * key.length + WINDOW_OVERHEAD_BYTES;
  }

  #sweep(now: number) {
    this.#sweptAt = now;
    for (const [key, w] of this.#windows) if (w.resetAt <= now) this.#delete(key);
  }
}

export interface RateLimitVerdict {
  headers: Record<string, string>;
}

/**
 * Counts a request and returns the `RateLimit-*` headers for the response, or throws
 * `rate_limit_exceeded` carrying them and `Retry-After`.
 */
export async function checkRateLimit(
  store: RateLimitStore,
  key: string,
  limit: { max: number; windowMs: number },
  now: number,
): Promise<RateLimitVerdict> {
  const { count, resetAt } = await store.hit(key, limit.windowMs, now);
  const resetSeconds = Math.max(1, Math.ceil((resetAt - now) / 1000));
  const headers = {
    'RateLimit-Limit': String(limit.max),
    'RateLimit-Remaining': String(Math.max(0, limit.max - count)),
    'RateLimit-Reset': String(resetSeconds),
  };
  if (count > limit.max) {
    throw new AppError('rate_limit_exceeded', `Too many requests: at most ${limit.max} per ${limit.windowMs} ms. Retry after ${resetSeconds} s.`, {
      headers: { ...headers, 'Retry-After': String(resetSeconds) },
    });
  }
  return { headers };
}
