/**
 * Rate-limit counters in Redis (`REDIS_URL`), so that every API process counts against the same
 * window of an account. A window is one key, `pigeon:rl:<account>:<window start>`, created by the
 * first hit and expiring with the window, so nothing needs cleaning up.
 *
 * If Redis cannot answer within a short time, the process counts on its own for that request
 * (per-process limits, logged) rather than refusing or stalling every request: a rate limit
 * protects the service, and an outage of its counter store must not become an outage of the API.
 */
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { MemoryRateLimitStore, type RateLimitStore } from './rate-limit.ts';

const HIT = `local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`;

export class RedisRateLimitStore implements RateLimitStore {
  readonly #redis: Redis;
  readonly #fallback = new MemoryRateLimitStore();
  #warnedAt = 0;

  constructor(
    url: string,
    private readonly log: Logger,
  ) {
    this.#redis = new Redis(url, { commandTimeout: 250, maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false });
    this.#redis.on('error', () => {}); // reported per failed hit below, rate-limited
  }

  async hit(key: string, windowMs: number, now: number) {
    const start = now - (now % windowMs);
    const resetAt = start + windowMs;
    try {
      const count = (await this.#redis.eval(HIT, 1, `pigeon:rl:${key}:${start}`, String(windowMs + 1000))) as number;
      return { count, resetAt };
    } catch (err) {
      if (now - this.#warnedAt > 10_000) {
        this.#warnedAt = now;
        this.log.warn({ err }, 'Redis rate-limit store unavailable; counting per process meanwhile');
      }
      return this.#fallback.hit(key, windowMs, now);
    }
  }

  /**
   * Resolves once the connection is up, or after `timeoutMs` whichever comes first: a process
   * waits for it before taking requests, so that its first requests are counted in Redis too.
   */
  ready(timeoutMs = 2000): Promise<boolean> {
    if (this.#redis.status === 'ready') return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.#redis.once('ready', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  async close(): Promise<void> {
    this.#redis.disconnect();
  }
}
