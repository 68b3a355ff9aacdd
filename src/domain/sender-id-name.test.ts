import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkSenderIdName, DEFAULT_RESERVED_SENDER_NAMES, senderNameKey } from './sender-id-name.ts';

const R = DEFAULT_RESERVED_SENDER_NAMES;

function invalid(name: string, reason: RegExp): void {
  const result = checkSenderIdName(name, R);
  assert.equal(result.ok, false, JSON.stringify(name));
  if (!result.ok) {
    assert.equal(result.code, 'invalid_sender_id_name', JSON.stringify(name));
    assert.match(result.reason, reason, JSON.stringify(name));
  }
}

function notAllowed(name: string, reserved: readonly string[] = R): void {
  const result = checkSenderIdName(name, reserved);
  assert.equal(result.ok, false, JSON.stringify(name));
  if (!result.ok) {
    assert.equal(result.code, 'sender_id_not_allowed', JSON.stringify(name));
    assert.match(result.reason, /reserved/);
  }
}

test('accepts 1 to 11 ASCII letters and digits', () => {
  for (const name of ['A', 'z', '7', 'Acme', 'ACME2024', 'abcdefghijk', 'ABCDEFGHIJK', '12345678901', 'a1B2c3D4e5F']) {
    assert.deepEqual(checkSenderIdName(name, R), { ok: true }, name);
  }
});

test('11 characters pass, 12 fail', () => {
  assert.deepEqual(checkSenderIdName('A'.repeat(11), R), { ok: true });
  invalid('A'.repeat(12), /at most 11 characters; this one has 12/);
  invalid('1'.repeat(40), /at most 11/);
});

test('rejects the empty name', () => {
  invalid('', /must not be empty/);
});

test('rejects whitespace anywhere, including leading and trailing', () => {
  for (const name of [' Acme', 'Acme ', 'Ac me', 'Acme\t', '\nAcme', 'Ac\u00a0me', 'Ac\u2003me', ' ']) {
    invalid(name, /whitespace/);
  }
});

test('rejects punctuation and symbols', () => {
  for (const name of ['Ac-me', 'Ac_me', 'Ac.me', 'Acme!', 'Acme&Co', 'A+B', '@acme', 'Acme#1', "O'Neil", 'Acme/1', 'Acme€', '\u0000Acme']) {
    invalid(name, /only the ASCII letters/);
  }
});

test('rejects non-ASCII letters and digits', () => {
  for (const name of ['Café', 'Über', 'Ñandu', 'Ωmega', 'Привет', '中文', 'Acme١', '١٢٣', 'Ａｃｍｅ', 'Acme😀', 'ǅ']) {
    invalid(name, /only the ASCII letters/);
  }
});

test('a name both too long and with bad characters reports the character rule', () => {
  invalid('Acme-Corporation', /only the ASCII letters/);
});

test('reserved names are refused case-insensitively as the whole name', () => {
  for (const name of ['BANK', 'bank', 'Bank', 'bAnK', 'PayPal', 'Gov', 'who', 'Un', 'WhatsApp', 'Verify']) notAllowed(name);
  for (const name of ['BANKSY', 'MyBank', 'Governor', 'Unicorn', 'Whole', 'PayPal1', 'Fireworks']) {
    assert.deepEqual(checkSenderIdName(name, R), { ok: true }, name);
  }
});

test('every default reserved name is refused in any case', () => {
  for (const name of R) {
    notAllowed(name);
    notAllowed(name.toLowerCase());
  }
});

test('the default list is upper-case, valid as names, unique, frozen and contains the required entries', () => {
  const required = [
    'GOV', 'GOVT', 'GOVERNMENT', 'POLICE', 'BANK', 'PAYPAL', 'GOOGLE', 'APPLE', 'AMAZON', 'MICROSOFT', 'FACEBOOK', 'META',
    'WHATSAPP', 'INSTAGRAM', 'NETFLIX', 'VISA', 'MASTERCARD', 'AMEX', 'IRS', 'HMRC', 'FBI', 'CIA', 'NHS', 'UN', 'WHO',
    'INTERPOL', 'ARMY', 'NAVY', 'EMERGENCY', 'AMBULANCE', 'FIRE', 'HOSPITAL', 'TAX', 'CUSTOMS', 'UBER', 'TWITTER',
    'TIKTOK', 'VERIFY', 'SECURITY', 'ADMIN', 'SUPPORT',
  ];
  for (const name of required) assert.ok(R.includes(name), name);
  for (const name of R) {
    assert.equal(name, name.toUpperCase());
    assert.deepEqual(checkSenderIdName(name, []), { ok: true }, name);
  }
  assert.equal(new Set(R).size, R.length);
  assert.ok(Object.isFrozen(R));
  assert.ok(!R.includes('INFO'));
  assert.deepEqual(checkSenderIdName('INFO', R), { ok: true });
});

test('operator-supplied reserved entries work in any case', () => {
  notAllowed('Acme', ['acme']);
  notAllowed('ACME', ['Acme']);
  assert.deepEqual(checkSenderIdName('Acme', []), { ok: true });
  assert.deepEqual(checkSenderIdName('BANK', []), { ok: true });
});

test('format errors win over reservation', () => {
  invalid('BANK ', /whitespace/);
  invalid('BANK!', /only the ASCII letters/);
});

test('senderNameKey folds case for uniqueness', () => {
  assert.equal(senderNameKey('Acme'), 'ACME');
  assert.equal(senderNameKey('aCmE123'), 'ACME123');
  assert.equal(senderNameKey('ACME'), senderNameKey('acme'));
  assert.notEqual(senderNameKey('Acme1'), senderNameKey('Acme2'));
});
