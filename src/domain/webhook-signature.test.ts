import { test } from 'node:test';
import assert from 'node:assert/strict';
import { signWebhook, signWebhookWithSecrets, verifyWebhookSignature } from './webhook-signature.ts';

const BODY = '{"event":"sms.delivered"}';
const T = 1_700_000_000;
// Computed independently: printf '%s' '1700000000.{"event":"sms.delivered"}' | openssl dgst -sha256 -hmac whsec_test
const SIG_TEST = '07e48177aaa0831cb609136884e02a46fbca2b8cd1b44cff4efcacc67d0fc099';
const SIG_NEW = '90b2f53a43d3202946ff30281cc7e2794fed3e2942023dd58fc6df95b2c2124a';
const NOW = { nowSeconds: T };

test('signWebhook produces t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">', () => {
  assert.equal(signWebhook(BODY, 'whsec_test', T), `t=${T},v1=${SIG_TEST}`);
});

test('signWebhookWithSecrets emits one v1 per secret, in order', () => {
  assert.equal(signWebhookWithSecrets(BODY, ['whsec_test', 'whsec_new'], T), `t=${T},v1=${SIG_TEST},v1=${SIG_NEW}`);
  assert.equal(signWebhookWithSecrets(BODY, ['whsec_test'], T), signWebhook(BODY, 'whsec_test', T));
});

test('signing rejects programmer errors', () => {
  assert.throws(() => signWebhookWithSecrets(BODY, [], T), RangeError);
  assert.throws(() => signWebhook(BODY, '', T), RangeError);
  assert.throws(() => signWebhook(BODY, 's', -1), RangeError);
  assert.throws(() => signWebhook(BODY, 's', 1.5), RangeError);
  assert.throws(() => signWebhook(BODY, 's', Number.NaN), RangeError);
  assert.equal(signWebhook(BODY, 's', 0).startsWith('t=0,v1='), true);
});

test('round trip verifies, including empty and non-ASCII bodies', () => {
  for (const body of [BODY, '', 'héllo 😀 “quotes”', '{"a":1}\n']) {
    assert.equal(verifyWebhookSignature(body, signWebhook(body, 'secret', T), 'secret', NOW), true, JSON.stringify(body));
  }
  assert.equal(verifyWebhookSignature(BODY, `t=${T},v1=${SIG_TEST}`, 'whsec_test', NOW), true);
});

test('a tampered body fails', () => {
  const header = signWebhook(BODY, 'secret', T);
  for (const body of ['{"event":"sms.failed"}', BODY + ' ', ' ' + BODY, BODY.toUpperCase(), '']) {
    assert.equal(verifyWebhookSignature(body, header, 'secret', NOW), false, JSON.stringify(body));
  }
});

test('a wrong secret fails', () => {
  const header = signWebhook(BODY, 'secret', T);
  assert.equal(verifyWebhookSignature(BODY, header, 'Secret', NOW), false);
  assert.equal(verifyWebhookSignature(BODY, header, 'secret ', NOW), false);
  assert.equal(verifyWebhookSignature(BODY, header, '', NOW), false);
});

test('a changed timestamp fails even inside the tolerance', () => {
  const forged = signWebhook(BODY, 'secret', T).replace(`t=${T}`, `t=${T + 1}`);
  assert.equal(verifyWebhookSignature(BODY, forged, 'secret', NOW), false);
});

test('timestamp tolerance: default 300 s either side, inclusive', () => {
  const header = signWebhook(BODY, 'secret', T);
  const at = (nowSeconds: number, toleranceSeconds?: number): boolean =>
    verifyWebhookSignature(BODY, header, 'secret', toleranceSeconds === undefined ? { nowSeconds } : { nowSeconds, toleranceSeconds });
  assert.equal(at(T + 300), true);
  assert.equal(at(T + 301), false);
  assert.equal(at(T - 300), true);
  assert.equal(at(T - 301), false);
  assert.equal(at(T + 86_400), false);
  assert.equal(at(T + 60, 60), true);
  assert.equal(at(T + 61, 60), false);
  assert.equal(at(T, 0), true);
  assert.equal(at(T + 1, 0), false);
  assert.equal(at(T + 1_000_000, Number.POSITIVE_INFINITY), true);
  assert.equal(at(T, -1), false);
  assert.equal(at(T, Number.NaN), false);
  assert.equal(at(Number.NaN), false);
});

test('multiple v1 values pass when any one is valid (secret rotation)', () => {
  const header = signWebhookWithSecrets(BODY, ['old', 'new'], T);
  assert.equal(verifyWebhookSignature(BODY, header, 'old', NOW), true);
  assert.equal(verifyWebhookSignature(BODY, header, 'new', NOW), true);
  assert.equal(verifyWebhookSignature(BODY, header, 'other', NOW), false);
  const bogus = 'f'.repeat(64);
  assert.equal(verifyWebhookSignature(BODY, `t=${T},v1=${bogus},v1=${SIG_TEST},v1=${bogus}`, 'whsec_test', NOW), true);
});

test('header items may come in any order, with spaces, upper-case hex and unknown schemes', () => {
  const ok = (header: string): boolean => verifyWebhookSignature(BODY, header, 'whsec_test', NOW);
  assert.equal(ok(`v1=${SIG_TEST},t=${T}`), true);
  assert.equal(ok(`v0=abc,t=${T},v2=zzz,v1=${SIG_TEST}`), true);
  assert.equal(ok(`t=${T}, v1=${SIG_TEST}`), true);
  assert.equal(ok(`t=${T},v1=${SIG_TEST.toUpperCase()}`), true);
  assert.equal(ok(`t=${T},v1=short,v1=${SIG_TEST}`), true);
  // Only v1 counts: the right digest under another scheme name is not accepted.
  assert.equal(ok(`t=${T},v0=${SIG_TEST}`), false);
  assert.equal(ok(`t=${T},V1=${SIG_TEST}`), false);
});

test('malformed headers return false and never throw', () => {
  const headers = [
    '',
    ',',
    '=',
    't=',
    'v1=',
    `t=${T}`,
    `v1=${SIG_TEST}`,
    `t=${T},v1=`,
    `t=${T},v1=${SIG_TEST.slice(0, 63)}`,
    `t=${T},v1=${SIG_TEST}0`,
    `t=${T},v1=${SIG_TEST.slice(0, 62)}zz`,
    `t=${T},v1=${SIG_TEST.slice(0, 32)}`,
    `t=abc,v1=${SIG_TEST}`,
    `t=-${T},v1=${SIG_TEST}`,
    `t=${T}.5,v1=${SIG_TEST}`,
    `t=1e9,v1=${SIG_TEST}`,
    `t=${'9'.repeat(400)},v1=${SIG_TEST}`,
    `t=${T},t=${T},v1=${SIG_TEST}`,
    `t=${T};v1=${SIG_TEST}`,
    `t=${T},v1=${SIG_TEST},garbage`,
    `t=${T} v1=${SIG_TEST}`,
    `t=${T},v1=${SIG_TEST},` + 'v1=x,'.repeat(2000),
    '\u0000',
    'v1=😀,t=😀',
  ];
  for (const header of headers) {
    assert.doesNotThrow(() => verifyWebhookSignature(BODY, header, 'whsec_test', NOW), header);
    assert.equal(verifyWebhookSignature(BODY, header, 'whsec_test', NOW), false, header.slice(0, 120));
  }
});

test('a timestamp with leading zeros is verified against the digits as written', () => {
  // The signature covers the header's t text, so re-padding a valid header breaks it.
  assert.equal(verifyWebhookSignature(BODY, `t=0${T},v1=${SIG_TEST}`, 'whsec_test', NOW), false);
});
