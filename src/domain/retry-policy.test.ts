import { test } from 'node:test';
import assert from 'node:assert/strict';
import { exponential, givesUp, retryDelay, schedule } from './retry-policy.ts';

test('a schedule gives its exact waits, then gives up (the webhook schedule of DECISIONS.md §4)', () => {
  const webhooks = schedule([0, 30_000, 300_000]);
  assert.equal(retryDelay(webhooks, 1), 30_000);
  assert.equal(retryDelay(webhooks, 2), 300_000);
  assert.equal(retryDelay(webhooks, 3), null);
  assert.equal(givesUp(webhooks, 2), false);
  assert.equal(givesUp(webhooks, 3), true);
  // No jitter: the random source is never consulted.
  assert.equal(retryDelay(webhooks, 1, () => assert.fail('no jitter wanted')), 30_000);
});

test('a one-entry schedule gives up after the first attempt', () => {
  assert.equal(retryDelay(schedule([0]), 1), null);
});

test('exponential waits grow by the factor up to the cap, and never give up without maxAttempts', () => {
  const policy = exponential({ baseMs: 200, factor: 2, maxMs: 5000 });
  assert.deepEqual(
    [1, 2, 3, 4, 5, 6, 7].map((n) => retryDelay(policy, n)),
    [200, 400, 800, 1600, 3200, 5000, 5000],
  );
  assert.equal(retryDelay(policy, 10_000), 5000);
  assert.equal(givesUp(policy, 10_000), false);
});

test('exponential with maxAttempts gives up after that many attempts', () => {
  const policy = exponential({ baseMs: 1000, factor: 3, maxMs: 60_000, maxAttempts: 3 });
  assert.equal(retryDelay(policy, 1), 1000);
  assert.equal(retryDelay(policy, 2), 3000);
  assert.equal(retryDelay(policy, 3), null);
});

test('jitter spreads a wait over ±jitter of it, by the random source', () => {
  const policy = exponential({ baseMs: 400, factor: 4, maxMs: 30_000, jitter: 0.25 });
  assert.equal(retryDelay(policy, 1, () => 0), 300);
  assert.equal(retryDelay(policy, 1, () => 0.5), 400);
  assert.equal(retryDelay(policy, 1, () => 0.999999), 500);
  assert.equal(retryDelay(policy, 2, () => 0), 1200);
  for (let i = 0; i < 100; i++) {
    const d = retryDelay(policy, 3)!;
    assert.ok(d >= 4800 && d <= 8000, String(d));
  }
  // A zero wait stays zero.
  assert.equal(retryDelay(schedule([0, 0], 0.5), 1, () => 0), 0);
});

test('attempts made must be a positive integer', () => {
  assert.throws(() => retryDelay(schedule([0, 1]), 0), RangeError);
  assert.throws(() => retryDelay(schedule([0, 1]), 1.5), RangeError);
});
