/**
 * Per-account request rate limit: a fixed window of `RATE_LIMIT_WINDOW_MS` allowing
 * `RATE_LIMIT_MAX` requests. The counter store is an interface so that a shared store (Redis)
 * can replace the in-process one when several API processes serve the same accounts.
 */
import { AppError } from '../errors/catalogue.ts';

export interface RateLimitStore {
  /** Counts one hit for `key` in the window that contains `now`; returns the count and the window's end. */
  hit(key: string, windowMs: number, now: number): Promise<{ count: number; resetAt: number }>;
}

export class MemoryRateLimitStore implements RateLimitStore {
  #windows = new Map<string, { count: number; resetAt: number }>();
  #sweptAt = 0;

  async hit(key: string, windowMs: number, now: number) {
    if (now - this.#sweptAt > 60_000) this.#sweep(now);
    let w = this.#windows.get(key);
    if (!w || w.resetAt <= now) {
      w = { count: 0, resetAt: now - (now % windowMs) + windowMs };
      this.#windows.set(key, w);
    }
    w.count++;
    return { count: w.count, resetAt: w.resetAt };
  }

  #sweep(now: number) {
    this.#sweptAt = now;
    for (const [key, w] of this.#windows) if (w.resetAt <= now) this.#windows.delete(key);
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
