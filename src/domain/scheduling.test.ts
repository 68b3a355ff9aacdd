import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkSendAt, parseRfc3339, validValidityPeriod } from './scheduling.ts';

const NOW = Date.parse('2026-03-01T12:00:00.000Z');

test('parseRfc3339 reads Z and numeric offsets, fractions to the millisecond, and nothing else', () => {
  assert.equal(parseRfc3339('2026-03-01T12:00:00Z'), NOW);
  assert.equal(parseRfc3339('2026-03-01t13:00:00+01:00'), NOW);
  assert.equal(parseRfc3339('2026-03-01T06:30:00.5-05:30'), NOW + 500);
  assert.equal(parseRfc3339('2026-03-01T12:00:00.123456789Z'), NOW + 123);
  assert.equal(parseRfc3339('2028-02-29T00:00:00Z'), Date.UTC(2028, 1, 29));
  for (const bad of ['2026-03-01T12:00:00', '2026-03-01', '2026-02-29T00:00:00Z', '2026-13-01T00:00:00Z', '2026-03-01T24:00:00Z', '2026-03-01T12:00:60Z', '2026-03-01T12:00:00+24:00', '1772366400000', ' 2026-03-01T12:00:00Z', '']) {
    assert.ok(Number.isNaN(parseRfc3339(bad)), bad);
  }
});

test('checkSendAt: 30 s of skew is now, earlier or over 35 days ahead is refused', () => {
  assert.deepEqual(checkSendAt('2026-03-01T11:59:30Z', NOW), { ok: true, at: NOW - 30_000, immediate: true });
  assert.deepEqual(checkSendAt('2026-03-01T12:00:00Z', NOW), { ok: true, at: NOW, immediate: true });
  assert.deepEqual(checkSendAt('2026-03-01T12:00:00.001Z', NOW), { ok: true, at: NOW + 1, immediate: false });
  assert.equal(checkSendAt('2026-04-05T12:00:00Z', NOW).ok, true);
  assert.equal(checkSendAt('2026-04-05T12:00:00.001Z', NOW).ok, false);
  assert.equal(checkSendAt('2026-03-01T11:59:29.999Z', NOW).ok, false);
  assert.equal(checkSendAt('soon', NOW).ok, false);
});

test('validValidityPeriod: whole seconds from 60 to 259,200', () => {
  assert.deepEqual([59, 60, 259_200, 259_201, 60.5, NaN].map(validValidityPeriod), [false, true, true, false, false, false]);
});
