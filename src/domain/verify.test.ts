import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, createSecretKey } from 'node:crypto';
import { blockDurationMs, codeHash, codeMatches, conversionBlocks, generateCode, maskedText, rangeOf, retryAfterSeconds, safeListCovers } from './verify.ts';

test('codes: the asked number of digits, digits spread over 0-9 in every place, leading zeros kept', () => {
  const counts = Array.from({ length: 6 }, () => new Array(10).fill(0));
  for (let i = 0; i < 4000; i++) {
    const code = generateCode(6);
    assert.match(code, /^\d{6}$/);
    [...code].forEach((d, place) => counts[place]![Number(d)]++);
  }
  // 400 expected for each digit in each place; 280-520 is over 6 standard deviations either way.
  for (const place of counts) for (const c of place) assert.ok(c > 280 && c < 520, `digit frequency ${c} of 4000 in one place`);
  for (const length of [4, 10]) assert.match(generateCode(length), new RegExp(`^\\d{${length}}$`));
});

test('the stored form is HMAC-SHA256 (RFC 4231 case 2) of id and code; comparison checks it', () => {
  assert.equal(createHmac('sha256', 'Jefe').update('what do ya want for nothing?').digest('hex'), '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
  const key = Buffer.from('Jefe');
  assert.equal(codeHash(key, 'ver_1', '123456'), createHmac('sha256', key).update('ver_1:123456').digest('hex'));
  const stored = codeHash(key, 'ver_1', '123456');
  assert.ok(codeMatches(key, 'ver_1', '123456', stored));
  assert.ok(!codeMatches(key, 'ver_1', '123457', stored));
  assert.ok(!codeMatches(key, 'ver_2', '123456', stored), 'bound to its verification');
  assert.ok(!codeMatches(Buffer.from('other'), 'ver_1', '123456', stored), 'bound to the key');
  assert.equal(codeHash(createSecretKey(key), 'ver_1', '123456'), stored, 'the same key as a KeyObject');
  assert.ok(codeMatches(createSecretKey(key), 'ver_1', '123456', stored));
});

test('masked text, ranges, safe list, the conversion rule and escalation', () => {
  assert.equal(maskedText('Your {name} code is {code}', 'Acme', 6), 'Your Acme code is ••••••');
  assert.equal(rangeOf('+447700900123'), '+447700900');
  assert.ok(safeListCovers(['+4477009'], '+447700900123'));
  assert.ok(safeListCovers(['+447700900123'], '+447700900123'));
  assert.ok(!safeListCovers(['+447700901'], '+447700900123'));
  assert.ok(!conversionBlocks(9, 0), 'below the threshold');
  assert.ok(conversionBlocks(10, 1));
  assert.ok(!conversionBlocks(10, 2), '20 % is enough');
  assert.deepEqual([0, 1, 2].map((l) => blockDurationMs(l) / 3_600_000), [12, 24, 48]);
  assert.equal(retryAfterSeconds(0, 3_600_000, 3_599_500), 1);
  assert.equal(retryAfterSeconds(0, 3_600_000, 1_800_000), 1800);
});
