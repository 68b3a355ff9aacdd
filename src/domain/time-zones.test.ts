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

  test('codes checked against libphonenumber\'s time-zone and geocoding data: the places they serve across a zone line', () => {
    assert.deepEqual(zonesOfNumber('+15035550123'), ['America/Los_Angeles'], 'Portland: Malheur County is in 541');
    assert.deepEqual(zonesOfNumber('+15415550123'), ['America/Los_Angeles', 'America/Boise']);
    assert.deepEqual(zonesOfNumber('+17755550123'), ['America/Los_Angeles', 'America/Denver'], 'West Wendover, Nevada');
    assert.deepEqual(zonesOfNumber('+12195550123'), ['America/New_York', 'America/Chicago'], 'Pulaski County, Indiana');
    assert.deepEqual(zonesOfNumber('+19315550123'), ['America/Chicago']);
    assert.deepEqual(zonesOfNumber('+17485550123'), ['America/Denver'], 'Colorado');
    assert.deepEqual(zonesOfNumber('+18215550123'), ['America/New_York'], 'South Carolina');
  });

  test('an overlay has its parent code\'s zones', () => {
    const overlays: [overlay: string, parent: string][] = [
      ['448', '850'], ['930', '812'], ['364', '270'], ['458', '541'], ['971', '503'], ['986', '208'], ['236', '250'], ['257', '250'], ['672', '250'],
      ['778', '250'], ['474', '306'], ['639', '306'], ['367', '418'], ['581', '418'], ['879', '709'], ['428', '506'], ['782', '902'], ['431', '204'],
      ['584', '204'], ['725', '702'], ['463', '317'], ['689', '407'], ['821', '864'], ['720', '303'], ['748', '303'], ['983', '303'], ['346', '713'],
      ['945', '214'], ['726', '210'], ['430', '903'], ['679', '313'], ['624', '716'], ['436', '440'], ['861', '815'], ['924', '507'], ['742', '905'],
      ['683', '705'], ['263', '514'], ['354', '450'], ['873', '819'], ['737', '512'], ['629', '615'], ['943', '404'], ['227', '301'], ['640', '609'],
      ['445', '215'], ['564', '360'], ['557', '314'], ['975', '816'], ['572', '405'], ['730', '618'], ['447', '217'], ['464', '708'], ['274', '920'],
      ['534', '715'], ['353', '608'], ['357', '559'], ['837', '209'],
    ];
    for (const [overlay, parent] of overlays) assert.deepEqual(NANP_AREA_CODE_ZONES.get(overlay), NANP_AREA_CODE_ZONES.get(parent), `${overlay} overlays ${parent}`);
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
