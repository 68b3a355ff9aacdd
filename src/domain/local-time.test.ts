import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isTimeZone, localTimeToInstant } from './local-time.ts';

test('an ordinary local time becomes its instant', () => {
  assert.deepEqual(localTimeToInstant('2026-03-02T09:00', 'Europe/Paris'), { ok: true, at: Date.parse('2026-03-02T08:00:00Z') });
  assert.deepEqual(localTimeToInstant('2026-07-02T09:00', 'Europe/Paris'), { ok: true, at: Date.parse('2026-07-02T07:00:00Z') });
  assert.deepEqual(localTimeToInstant('2026-03-02 09:00:30', 'America/New_York'), { ok: true, at: Date.parse('2026-03-02T14:00:30Z') });
  assert.deepEqual(localTimeToInstant('2026-03-02T09:00', 'Asia/Kolkata'), { ok: true, at: Date.parse('2026-03-02T03:30:00Z') });
  assert.deepEqual(localTimeToInstant('2026-03-02T09:00', 'UTC'), { ok: true, at: Date.parse('2026-03-02T09:00:00Z') });
});

test('a time the clocks skip is refused, as is one they repeat; the hours around them are fine', () => {
  // Europe: forward at 02:00 on 29 March 2026, back at 03:00 on 25 October 2026.
  const skipped = localTimeToInstant('2026-03-29T02:30', 'Europe/Paris');
  assert.equal(skipped.ok, false);
  assert.equal(!skipped.ok && skipped.code, 'skipped');
  assert.match(!skipped.ok ? skipped.reason : '', /does not exist in Europe\/Paris/);
  const repeated = localTimeToInstant('2026-10-25T02:30', 'Europe/Paris');
  assert.equal(!repeated.ok && repeated.code, 'repeated');
  assert.deepEqual(localTimeToInstant('2026-03-29T03:30', 'Europe/Paris'), { ok: true, at: Date.parse('2026-03-29T01:30:00Z') });
  assert.deepEqual(localTimeToInstant('2026-10-25T03:30', 'Europe/Paris'), { ok: true, at: Date.parse('2026-10-25T02:30:00Z') });
  // The United States: forward on 8 March 2026 at 02:00.
  assert.equal((localTimeToInstant('2026-03-08T02:15', 'America/Chicago') as { code?: string }).code, 'skipped');
  assert.equal((localTimeToInstant('2026-11-01T01:15', 'America/Chicago') as { code?: string }).code, 'repeated');
});

test('malformed input, impossible dates and unknown zones are refused', () => {
  for (const [local, zone, code] of [
    ['2026-02-30T09:00', 'Europe/Paris', 'invalid'],
    ['2026-03-02T24:00', 'Europe/Paris', 'invalid'],
    ['tomorrow 9am', 'Europe/Paris', 'invalid'],
    ['2026-03-02T09:00', 'Mars/Olympus', 'unknown_zone'],
    ['2026-03-02T09:00', '', 'unknown_zone'],
  ] as const) {
    const r = localTimeToInstant(local, zone);
    assert.equal(!r.ok && r.code, code, `${local} ${zone}`);
  }
  assert.equal(isTimeZone('Europe/Paris'), true);
  assert.equal(isTimeZone('Nowhere/Special'), false);
});
