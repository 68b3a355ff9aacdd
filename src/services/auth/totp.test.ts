/** TOTP against RFC 6238 Appendix B (the SHA-1 vectors) and the window and format rules of §15. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newTotpSecret, totpCodeAt, totpStepOf, totpUri } from './totp.ts';

// The Appendix B seed for SHA-1 is the ASCII "12345678901234567890", here in base32.
const RFC_SECRET = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ';
const VECTORS: [number, string][] = [
  [59, '94287082'],
  [1111111109, '07081804'],
  [1111111111, '14050471'],
  [1234567890, '89005924'],
  [2000000000, '69279037'],
  [20000000000, '65353130'],
];

test('RFC 6238 Appendix B SHA-1 vectors (8 digits), and their 6-digit codes', () => {
  for (const [seconds, code] of VECTORS) {
    assert.equal(totpCodeAt(RFC_SECRET, seconds * 1000, 8), code, `T=${seconds}`);
    assert.equal(totpCodeAt(RFC_SECRET, seconds * 1000), code.slice(2), `T=${seconds}, 6 digits`);
  }
});

test('a code is valid in its step and one step either side, not two', () => {
  const t = 1111111111 * 1000;
  const code = totpCodeAt(RFC_SECRET, t);
  const step = Math.floor(t / 30000);
  assert.equal(totpStepOf(RFC_SECRET, code, t), step);
  assert.equal(totpStepOf(RFC_SECRET, code, t + 30000), step);
  assert.equal(totpStepOf(RFC_SECRET, code, t - 30000), step);
  assert.equal(totpStepOf(RFC_SECRET, code, t + 60000), null);
  assert.equal(totpStepOf(RFC_SECRET, code, t - 60000), null);
  assert.equal(totpStepOf(RFC_SECRET, '12345', t), null);
  assert.equal(totpStepOf(RFC_SECRET, `${code} `, t), null);
});

test('secrets are 160 random bits; the URI names the issuer Pigeon, SHA1, 6 digits, 30 s', () => {
  const a = newTotpSecret();
  assert.match(a, /^[A-Z2-7]{32}$/);
  assert.notEqual(a, newTotpSecret());
  const uri = new URL(totpUri(a, 'ann@example.com'));
  assert.equal(uri.protocol, 'otpauth:');
  assert.equal(uri.host, 'totp');
  assert.equal(decodeURIComponent(uri.pathname), '/Pigeon:ann@example.com');
  assert.equal(uri.searchParams.get('issuer'), 'Pigeon');
  assert.equal(uri.searchParams.get('secret'), a);
  assert.equal(uri.searchParams.get('algorithm'), 'SHA1');
  assert.equal(uri.searchParams.get('digits'), '6');
  assert.equal(uri.searchParams.get('period'), '30');
});
