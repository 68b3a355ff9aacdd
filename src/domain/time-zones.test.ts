import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { NANP_AREA_CODES_AS_WRITTEN, NANP_AREA_CODE_ZONES } from './nanp-area-codes.ts';
import { zonesOfCountry, zonesOfNumber } from './time-zones.ts';
import { isTimeZone } from './local-time.ts';
import { DEFAULT_WINDOW, nextOpening } from './quiet-hours.ts';

describe('time zones of a number', () => {
  test('+1 by area code: New York, Hawaii, Arizona, a code spanning two zones, Canada, the Caribbean', () => {
    assert.deepEqual(zonesOfNumber('+12125550123'), ['America/New_York']);
    assert.deepEqual(zonesOfNumber('+18085550123'), ['Pacific/Honolulu']);
    assert.deepEqual(zonesOfNumber('+16025550123'), ['America/Phoenix']);
    assert.deepEqual(zonesOfNumber('+19285550123'), ['America/Phoenix', 'America/Denver'], 'the Navajo Nation keeps DST');
    assert.deepEqual(zonesOfNumber('+18505550123'), ['America/New_York', 'America/Chicago'], 'the Florida panhandle');
    assert.deepEqual(zonesOfNumber('+14165550123'), ['America/Toronto']);
    assert.deepEqual(zonesOfNumber('+18765550123'), ['America/Jamaica']);
    assert.deepEqual(zonesOfNumber('+17875550123'), ['America/Puerto_Rico']);
  });

  test('a split code: the window opens when the later zone opens', () => {
    // 06:00 in Chicago, 07:00 in New York on a June morning: 850 opens at 08:00 Chicago time.
    const o = nextOpening(Date.parse('2026-06-10T11:00:00Z'), zonesOfNumber('+18505550123'), DEFAULT_WINDOW)!;
    assert.equal(new Date(o.opensAt).toISOString(), '2026-06-10T13:00:00.000Z');
  });

  test('other numbers by country, every zone of a country with several', () => {
    assert.deepEqual(zonesOfNumber('+447400123456'), ['Europe/London']);
    assert.deepEqual(zonesOfNumber('+33612345678'), ['Europe/Paris']);
    const au = zonesOfNumber('+61412345678');
    assert.ok(au.includes('Australia/Perth') && au.includes('Australia/Sydney'), au.join());
    assert.ok(zonesOfCountry('US').includes('Pacific/Honolulu'));
    assert.deepEqual(zonesOfCountry('ZZ'), []);
  });

  test('+1 without a known area code: the zones of every NANP country (a wide set, never none)', () => {
    const zones = zonesOfNumber('+18005550123');
    assert.ok(zones.includes('America/New_York') && zones.includes('America/Los_Angeles'), zones.join());
  });

  test('the table: every code three digits, listed once, with zones this runtime knows', () => {
    assert.equal(new Set(NANP_AREA_CODES_AS_WRITTEN).size, NANP_AREA_CODES_AS_WRITTEN.length, 'a code is listed twice');
    assert.ok(NANP_AREA_CODE_ZONES.size > 400, `${NANP_AREA_CODE_ZONES.size} codes`);
    for (const [code, zones] of NANP_AREA_CODE_ZONES) {
      assert.match(code, /^[2-9][0-8]\d$/);
      assert.ok(zones.length > 0);
      for (const zone of zones) assert.ok(isTimeZone(zone), `${code}: ${zone}`);
    }
  });
});
