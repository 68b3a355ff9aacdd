import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max';
import metadataJson from 'libphonenumber-js/max/metadata';
import { COUNTRIES, countryByCode, countryOfNumber, nationalShortcut, readPhoneNumber } from './national-number.ts';

const reads = (input: string, country: string | null, e164: string, national = true) => assert.deepEqual(readPhoneNumber(input, country), { ok: true, e164, national }, `${input} in ${country}`);

test('national numbers as people write them, read against the default country', () => {
  reads('07400 123401', 'GB', '+447400123401');
  reads('07400123401', 'GB', '+447400123401');
  reads('(415) 555-2671', 'US', '+14155552671');
  reads('415.555.2671', 'US', '+14155552671');
  reads('06 12 34 56 78', 'FR', '+33612345678');
  reads('0712 345678', 'KE', '+254712345678');
  reads('020 7946 0958', 'gb', '+442079460958');
});

test('what spreadsheets make of them: the lost trunk 0, the country code without +, the 00 prefix', () => {
  reads('7400123401', 'GB', '+447400123401');
  reads('447400123401', 'GB', '+447400123401');
  reads('0044 7400 123401', 'GB', '+447400123401');
});

test('a number with its + is international, whatever the country, and read as the API reads `to`', () => {
  reads('+33 6 12 34 56 78', 'GB', '+33612345678', false);
  reads('+447400123401', null, '+447400123401', false);
  const bad = readPhoneNumber('+44 0 7400 123401', 'GB');
  assert.equal(bad.ok, false);
  assert.match(!bad.ok ? bad.reason : '', /national prefix/);
});

test('without a default country, a number needs its +, as before', () => {
  const r = readPhoneNumber('07400 123401', null);
  assert.deepEqual(r, { ok: false, reason: 'it must start with "+" followed by the country calling code (no "00" prefix, no spaces before).', national: false });
  assert.equal(readPhoneNumber('07400 123401', 'XX').ok, false, 'an unknown country is none');
});

test('what cannot be read says why', () => {
  const why = (input: string, country: string) => {
    const r = readPhoneNumber(input, country);
    assert.equal(r.ok, false, input);
    return r.ok ? '' : r.reason;
  };
  assert.match(why('0740 01', 'GB'), /cannot be read as a number of United Kingdom \(\+44\): it is too short/);
  assert.match(why('07400 123401 999', 'GB'), /it is too long/);
  assert.match(why('call me', 'GB'), /^it is not a phone number/);
  assert.match(why('0740O 123401', 'GB'), /^it is not a phone number/);
  assert.match(why('555-2671', 'US'), /United States \(\+1\)/);
});

test('countries: by code, named in English with their calling code; the country of a number', () => {
  assert.deepEqual(countryByCode('gb'), { code: 'GB', name: 'United Kingdom', callingCode: '44' });
  assert.equal(countryByCode(''), undefined);
  assert.ok(COUNTRIES.length > 200);
  assert.equal(countryOfNumber('+447400123401'), 'GB');
  assert.equal(countryOfNumber('+14155552671'), 'US');
  // A range kept for drama (not in service): the calling code's main country.
  assert.equal(countryOfNumber('+447700900123'), 'GB');
  assert.equal(countryOfNumber('+999123'), undefined);
});

test('the country of a number is libphonenumber-js’s, under every calling code (property test)', () => {
  const codes = Object.keys((metadataJson as unknown as { country_calling_codes: Record<string, string[]> }).country_calling_codes);
  const byLibrary = (e164: string) => {
    const parsed = parsePhoneNumberFromString(e164);
    if (!parsed) return undefined;
    return parsed.country ?? (metadataJson as unknown as { country_calling_codes: Record<string, string[]> }).country_calling_codes[parsed.countryCallingCode]![0];
  };
  fc.assert(
    fc.property(fc.constantFrom(...codes), fc.stringMatching(/^[0-9]{0,16}$/), (code, national) => {
      const e164 = `+${code}${national}`;
      assert.equal(countryOfNumber(e164), byLibrary(e164), e164);
    }),
    { numRuns: 20_000 },
  );
  // Under the calling codes several countries share, numbers of the lengths they use: each
  // country's leading digits and patterns decide, and 1 (US, CA and the Caribbean) most of all.
  const shared = codes.filter((code) => (metadataJson as unknown as { country_calling_codes: Record<string, string[]> }).country_calling_codes[code]!.length > 1);
  fc.assert(
    fc.property(fc.constantFrom(...shared), fc.stringMatching(/^[0-9]{4,12}$/), (code, national) => {
      const e164 = `+${code}${national}`;
      assert.equal(countryOfNumber(e164), byLibrary(e164), e164);
    }),
    { numRuns: 20_000 },
  );
  // Every NANP area code, with exchanges and lines across their range, and a leading 1 (the
  // national prefix, left to the parse).
  for (let area = 200; area <= 999; area++) {
    for (const rest of ['2000000', '2459876', '5550123', '7771234', '9999999', '0123456', '1234567']) {
      for (const e164 of [`+1${area}${rest}`, `+11${area}${rest}`, `+1${area}${rest.slice(1)}`]) assert.equal(countryOfNumber(e164), byLibrary(e164), e164);
    }
  }
  assert.equal(countryOfNumber('+14155552671'), 'US');
  assert.equal(countryOfNumber('+16135550123'), 'CA');
  assert.equal(countryOfNumber('+18765550123'), 'JM');
  assert.equal(countryOfNumber('+447700900123'), 'GB');
  assert.equal(countryOfNumber('+447781123456'), 'GG');
  // Each calling code with a few national numbers of every length.
  for (const code of codes) {
    for (let length = 0; length <= 14; length++) {
      const e164 = `+${code}${'7'.repeat(length)}`;
      assert.equal(countryOfNumber(e164), byLibrary(e164), e164);
    }
  }
});

test('the shortcut reads a number as libphonenumber-js does, whenever it answers', () => {
  // A seeded generator: the same numbers on every run.
  let seed = 36;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const digits = (n: number) => Array.from({ length: n }, () => Math.floor(random() * 10)).join('');
  let answered = 0;
  for (const { code, callingCode } of COUNTRIES) {
    for (let i = 0; i < 120; i++) {
      const kind = i % 4;
      const number = kind === 0 ? `0${digits(6 + (i % 7))}` : kind === 1 ? digits(6 + (i % 8)) : kind === 2 ? `${callingCode}${digits(8)}` : `00${callingCode}${digits(9)}`;
      const fast = nationalShortcut(number, code);
      if (fast === undefined) continue;
      answered++;
      const parsed = parsePhoneNumberFromString(number, code as CountryCode);
      assert.ok(parsed?.isPossible(), `${number} in ${code}: the shortcut says ${fast}, libphonenumber-js says not possible`);
      assert.equal(fast, parsed!.number, `${number} in ${code}`);
    }
  }
  assert.ok(answered > 3000, `the shortcut answered ${answered} times`);
  assert.equal(nationalShortcut('07400123401', 'GB'), '+447400123401');
  assert.equal(nationalShortcut('4155552671', 'US'), '+14155552671');
  assert.equal(nationalShortcut('447400123401', 'GB'), undefined, 'the calling code first: the full parse');
});
