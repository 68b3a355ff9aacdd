import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DEFAULT_WINDOW, RELEASE_SPREAD_MS, insideWindow, nextOpening, openingToWaitFor, parseWindow, releaseTime } from './quiet-hours.ts';

const utc = (iso: string) => Date.parse(iso);
const opens = (at: string, zones: string[]) => {
  const o = nextOpening(utc(at), zones, DEFAULT_WINDOW);
  return o === null ? null : new Date(o.opensAt).toISOString();
};

describe('sending window', () => {
  test('never wider than 08:00-21:00, at least an hour, HH:MM', () => {
    assert.deepEqual(parseWindow('08:00', '20:00'), { ok: true, window: { start: 480, end: 1200 } });
    assert.equal(parseWindow('08:00', '21:00').ok, true);
    assert.equal(parseWindow('07:59', '20:00').ok, false);
    assert.equal(parseWindow('08:00', '21:01').ok, false);
    assert.equal(parseWindow('10:00', '10:30').ok, false);
    assert.equal(parseWindow('8:00', '20:00').ok, false);
    assert.equal(parseWindow('12:00', '09:00').ok, false);
  });

  test('New York at 23:00 opens at 08:00 the next morning; inside the window nothing is held', () => {
    assert.equal(opens('2026-06-10T03:00:00Z', ['America/New_York']), '2026-06-10T12:00:00.000Z');
    assert.equal(opens('2026-06-10T15:00:00Z', ['America/New_York']), null);
    assert.equal(opens('2026-06-11T00:00:00Z', ['America/New_York']), '2026-06-11T12:00:00.000Z', '20:00 is already closed');
  });

  test('US spring forward (8 March 2026): the night is an hour shorter, 08:00 is EDT', () => {
    assert.equal(opens('2026-03-08T04:00:00Z', ['America/New_York']), '2026-03-08T12:00:00.000Z');
    assert.equal(opens('2026-03-07T04:00:00Z', ['America/New_York']), '2026-03-07T13:00:00.000Z', 'the day before, 08:00 EST');
  });

  test('US fall back (1 November 2026): 08:00 is EST after a night an hour longer', () => {
    assert.equal(opens('2026-11-01T05:30:00Z', ['America/New_York']), '2026-11-01T13:00:00.000Z');
    assert.equal(insideWindow(utc('2026-11-01T12:30:00Z'), ['America/New_York'], DEFAULT_WINDOW), false, '07:30 EST, which was 08:30 EDT the day before');
  });

  test('Arizona keeps standard time all year; Hawaii too', () => {
    assert.equal(opens('2026-07-01T05:00:00Z', ['America/Phoenix']), '2026-07-01T15:00:00.000Z');
    assert.equal(opens('2026-01-01T05:00:00Z', ['America/Phoenix']), '2026-01-01T15:00:00.000Z');
    assert.equal(opens('2026-07-01T10:00:00Z', ['Pacific/Honolulu']), '2026-07-01T18:00:00.000Z');
    assert.equal(opens('2026-03-08T10:00:00Z', ['Pacific/Honolulu']), '2026-03-08T18:00:00.000Z');
  });

  test('a number in two zones waits for the later one to open and stops at the earlier one closing', () => {
    const zones = ['America/Chicago', 'America/Denver'];
    const o = nextOpening(utc('2026-06-10T12:00:00Z'), zones, DEFAULT_WINDOW)!;
    assert.equal(new Date(o.opensAt).toISOString(), '2026-06-10T14:00:00.000Z', '08:00 in Denver, 09:00 in Chicago');
    assert.equal(new Date(o.closesAt).toISOString(), '2026-06-11T01:00:00.000Z', '20:00 in Chicago');
    assert.equal(insideWindow(utc('2026-06-10T13:30:00Z'), zones, DEFAULT_WINDOW), false, 'open in Chicago only');
  });

  test('zones that share no time in the window: the first zone decides, and a message inside its window is not held for ever', () => {
    const zones = ['America/New_York', 'America/Los_Angeles'];
    const hour = { start: 9 * 60, end: 10 * 60 };
    // 09:30 in New York, 06:30 in Los Angeles: never both inside 09:00-10:00.
    const at = utc('2026-06-10T13:30:00Z');
    assert.equal(openingToWaitFor(at, zones, hour), null, 'goes now');
    const night = openingToWaitFor(utc('2026-06-10T03:00:00Z'), zones, hour)!;
    assert.equal(new Date(night.opensAt).toISOString(), '2026-06-10T13:00:00.000Z', '09:00 in New York');
    assert.equal(openingToWaitFor(night.opensAt, zones, hour), null, 'and at that opening it goes');
    // Zones that do share the window: the same as nextOpening.
    assert.deepEqual(openingToWaitFor(utc('2026-06-10T12:00:00Z'), ['America/Chicago', 'America/Denver'], DEFAULT_WINDOW), nextOpening(utc('2026-06-10T12:00:00Z'), ['America/Chicago', 'America/Denver'], DEFAULT_WINDOW));
  });

  test('the release spread is deterministic per message, within the first 30 minutes', () => {
    const o = { opensAt: 1_000_000, closesAt: 1_000_000 + 12 * 3_600_000 };
    assert.equal(releaseTime(o, 'msg_a'), releaseTime(o, 'msg_a'));
    const times = new Set(['msg_a', 'msg_b', 'msg_c', 'msg_d'].map((id) => releaseTime(o, id)));
    assert.ok(times.size > 1, 'spread, not one burst');
    for (const t of times) assert.ok(t >= o.opensAt && t < o.opensAt + RELEASE_SPREAD_MS);
  });

  const ZONE_SETS = [['America/New_York'], ['America/Phoenix'], ['Pacific/Honolulu'], ['America/Chicago', 'America/Denver'], ['America/Los_Angeles'], ['America/Anchorage'], ['Europe/London'], ['Australia/Perth', 'Australia/Sydney'], ['Asia/Kolkata'], ['America/St_Johns']];
  test('property: whenever a message is held, its release time is inside the window in all its zones', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: utc('2026-01-01T00:00:00Z'), max: utc('2028-12-31T00:00:00Z') }),
        fc.constantFrom(...ZONE_SETS),
        fc.string({ minLength: 1, maxLength: 20 }),
        fc.constantFrom(DEFAULT_WINDOW, { start: 480, end: 1260 }, { start: 540, end: 600 }),
        (at, zones, id, window) => {
          // An hour-long window shares no time between zones hours apart: covered by the wide ones.
          fc.pre(zones.length === 1 || window.end - window.start >= 12 * 60);
          const o = nextOpening(at, zones, window);
          const release = o === null ? at : releaseTime(o, id);
          assert.ok(release >= at);
          assert.ok(insideWindow(release, zones, window), `${new Date(at).toISOString()} ${zones.join()} → ${new Date(release).toISOString()}`);
        },
      ),
      { numRuns: 1000 },
    );
  });
});
