/**
 * With REDIS_URL, two API processes share one window per account. Needs the Redis server at
 * 127.0.0.1:6379 (started by .ci/run).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { buildApp } from '../../src/http/app.ts';
import { RedisRateLimitStore } from '../../src/services/rate-limit/redis-rate-limit-store.ts';
import { harness, type Harness } from '../helpers/harness.ts';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('rate limits shared through Redis', () => {
  let h: Harness;
  const stores: RedisRateLimitStore[] = [];
  before(async () => {
    h = await harness({ RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_MS: '60000' });
  });
  after(async () => {
    for (const s of stores) await s.close();
    await h.close();
  });

  test('the same limit whichever process answers', async () => {
    const log = pino({ level: 'silent' });
    const apps = await Promise.all(
      [0, 1].map(async () => {
        const store = new RedisRateLimitStore(REDIS_URL, log);
        stores.push(store);
        assert.ok(await store.ready(5000), `Redis at ${REDIS_URL} is not reachable`);
        return buildApp({ ctx: h.ctx, rateLimits: store });
      }),
    );
    // Account ids are new on every run, so counters of earlier runs never interfere.
    const { key } = await h.customer();
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await apps[i % 2]!.inject({ method: 'GET', url: '/v1/account', headers: { authorization: `Bearer ${key}` } });
      statuses.push(res.statusCode);
      if (i === 1) assert.equal(res.headers['ratelimit-remaining'], '1', 'the second process sees the first one’s hit');
    }
    assert.deepEqual(statuses, [200, 200, 200, 429, 429]);
    for (const app of apps) await app.close();
  });

  test('when Redis is unreachable, requests are still answered (counted per process)', async () => {
    const store = new RedisRateLimitStore('redis://127.0.0.1:1', pino({ level: 'silent' }));
    stores.push(store);
    const app = await buildApp({ ctx: h.ctx, rateLimits: store });
    const { key } = await h.customer();
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await app.inject({ method: 'GET', url: '/v1/account', headers: { authorization: `Bearer ${key}` } })).statusCode);
    assert.deepEqual(statuses, [200, 200, 200, 429]);
    await app.close();
  });
});
