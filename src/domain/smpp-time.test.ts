import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseSmppTime } from './smpp-time.ts';

const now = Date.UTC(2026, 10, 26, 12, 0, 0);

test('absolute times read their quarter-hour offset from UTC', () => {
  assert.deepEqual(parseSmppTime('261126130000000+', now), { ok: true, at: Date.UTC(2026, 10, 26, 13, 0, 0) });
  assert.deepEqual(parseSmppTime('261126130000004+', now), { ok: true, at: Date.UTC(2026, 10, 26, 12, 0, 0) });
  assert.deepEqual(parseSmppTime('261126130000508-', now), { ok: true, at: Date.UTC(2026, 10, 26, 15, 0, 0, 500) });
});

test('relative times count from now', () => {
  assert.deepEqual(parseSmppTime('000001020304000R', now), { ok: true, at: now + ((24 + 2) * 3600 + 3 * 60 + 4) * 1000, relativeMs: ((24 + 2) * 3600 + 3 * 60 + 4) * 1000 });
  assert.deepEqual(parseSmppTime('', now), { ok: true, at: null });
});

test('anything else is refused', () => {
  for (const bad of ['2611261300', '261126130000000*', '261326130000000+', '260231130000000+', '261126250000000+', '261126130000049+', 'abcdefghijklmnop']) {
    assert.equal(parseSmppTime(bad, now).ok, false, bad);
  }
});
