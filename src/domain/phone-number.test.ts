import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseRecipient } from './phone-number.ts';

function accepts(input: string, e164: string): void {
  assert.deepEqual(parseRecipient(input), { ok: true, e164 }, JSON.stringify(input));
}

function rejects(input: string, reason?: RegExp): void {
  const result = parseRecipient(input);
  assert.equal(result.ok, false, `${JSON.stringify(input)} should be rejected`);
  if (!result.ok) {
    assert.ok(result.reason.length > 0);
    if (reason) assert.match(result.reason, reason, JSON.stringify(input));
  }
}

test('accepts possible numbers from several countries', () => {
  for (const n of ['+14155552671', '+447911123456', '+2348031234567', '+254712345678', '+33612345678', '+919876543210', '+5511987654321', '+8613812345678', '+390612345678', '+78005553535']) {
    accepts(n, n);
  }
});

test('accepts visual separators after the plus and normalises them away', () => {
  accepts('+1 (415) 555-2671', '+14155552671');
  accepts('+44 7911.123.456', '+447911123456');
  accepts('+234-803-123-4567', '+2348031234567');
  accepts('+254 712 345 678', '+254712345678');
  accepts('+33 6 12 34 56 78', '+33612345678');
  accepts('+91 98765-43210', '+919876543210');
  accepts('+(1)4155552671', '+14155552671');
  accepts('+ 1 415 555 2671', '+14155552671');
  accepts('+1--415..555  2671', '+14155552671');
});

test('the 8 to 15 digit bounds of E.164', () => {
  // 8 digits: Saint Helena (+290) has 4-5 digit national numbers.
  accepts('+29012345', '+29012345');
  rejects('+2901234', /7 digits; at least 8/);
  // 15 digits: Germany allows long national numbers.
  accepts('+493012345678901', '+493012345678901');
  rejects('+4930123456789012', /16 digits; E\.164 allows at most 15/);
});

test('rejects input without a leading plus', () => {
  rejects('14155552671', /must start with "\+"/);
  rejects('00447911123456', /must start with "\+"/);
  rejects('0044 7911 123456', /must start with "\+"/);
  rejects('(+1) 415 555 2671', /must start with "\+"/);
  rejects(' +14155552671', /must start with "\+"/);
  rejects('-+14155552671', /must start with "\+"/);
});

test('rejects other characters, trailing garbage and doubled plus', () => {
  for (const n of [
    '+14155552671 ',
    '+14155552671\n',
    '+1415555267a',
    '+1 415 CALL NOW',
    '++14155552671',
    '+1+4155552671',
    '+1 415 555 2671 ext 5',
    '+1/415/555/2671',
    '+1\t4155552671',
    '+1\u00a04155552671',
    '+1 415 555 2671)',
    '+14155552671-',
    '+\uff11\uff14\uff11\uff15\uff15\uff15\uff15\uff12\uff16\uff17\uff11', // full-width digits
    '+\u0661\u0664\u0661\u0665\u0665\u0665\u0665\u0662\u0666\u0667\u0661', // Arabic-Indic digits
    '\uff0b14155552671', // full-width plus
    '+',
    '+ ',
    '+()',
  ]) {
    rejects(n);
  }
  rejects('', /empty/);
});

test('rejects a country calling code starting with 0', () => {
  rejects('+0447911123456', /never start with 0/);
  rejects('+0 415 555 2671', /never start with 0/);
});

test('rejects unknown country calling codes', () => {
  rejects('+99912345678', /known country calling code/);
  rejects('+2891234567', /known country calling code/);
});

test('rejects lengths impossible for the country', () => {
  rejects('+1 415 555 267', /not possible for country calling code \+1\b/);
  rejects('+141555526712', /not possible for country calling code \+1\b/);
  rejects('+3312345678', /\+33/);
  rejects('+2348031234', /\+234/);
  rejects('+4479111234567', /\+44/);
});

test('rejects a national trunk prefix written after the country code', () => {
  rejects('+44 (0) 7911 123456', /national prefix.*\+447911123456/);
  rejects('+4407911123456', /national prefix/);
  rejects('+33 0612345678', /national prefix/);
  rejects('+234 0803 123 4567', /national prefix/);
  // When the number without the prefix is impossible too, nothing is suggested.
  rejects('+44 0 8602 991 0991', /^it contains a national prefix after the country calling code\.$/);
});

test('results are exactly "+" and digits', () => {
  const result = parseRecipient('+1 (415) 555-2671');
  assert.ok(result.ok);
  if (result.ok) assert.match(result.e164, /^\+[1-9][0-9]{7,14}$/);
});

test('the shortcut never accepts a number that libphonenumber would not (random numbers for every calling code)', async () => {
  const { parsePhoneNumberFromString } = await import('libphonenumber-js/max');
  const { surelyPossible } = await import('./phone-number.ts');
  const codes = Object.keys(((await import('libphonenumber-js/max/metadata')).default as unknown as { country_calling_codes: Record<string, unknown> }).country_calling_codes);
  let seed = 12345;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  let fast = 0;
  for (let i = 0; i < 200_000; i++) {
    const code = codes[rand(codes.length)]!;
    const length = 8 + rand(8) - code.length;
    let national = '';
    for (let d = 0; d < Math.max(1, length); d++) national += String(rand(10));
    const digits = code + national;
    if (digits.length < 8 || digits.length > 15) continue;
    if (!surelyPossible(digits)) continue;
    fast++;
    const parsed = parsePhoneNumberFromString(`+${digits}`);
    assert.ok(parsed && parsed.number === `+${digits}` && parsed.isPossible(), `+${digits} is taken by the shortcut but not by libphonenumber`);
  }
  assert.ok(fast > 10_000, `the shortcut took ${fast} numbers: too few to mean anything`);
});
