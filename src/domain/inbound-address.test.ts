import assert from 'node:assert/strict';
import { test } from 'node:test';
import { callingCodeOfNumber, normaliseSender, TON } from './inbound-address.ts';

test('international senders get their "+"; national ones the country of our number', () => {
  assert.equal(normaliseSender('447911123456', TON.international, '+447700900123'), '+447911123456');
  assert.equal(normaliseSender('07911123456', TON.national, '+447700900123'), '+447911123456');
  assert.equal(normaliseSender('0612345678', TON.national, '+33612345678'), '+33612345678');
  assert.equal(normaliseSender('447911123456', TON.unknown, '+447700900123'), '+447911123456');
  assert.equal(normaliseSender('07911123456', TON.unknown, '+447700900123'), '+447911123456');
  assert.equal(normaliseSender('+447911123456', TON.unknown, '60606'), '+447911123456');
});

test('short codes and alphanumeric senders stay as they came', () => {
  assert.equal(normaliseSender('Acme', TON.alphanumeric, '+447700900123'), 'Acme');
  assert.equal(normaliseSender('60606', TON.network, '+447700900123'), '60606');
  assert.equal(normaliseSender('12', TON.national, '60606'), '12');
  assert.equal(callingCodeOfNumber('+447700900123'), '44');
  assert.equal(callingCodeOfNumber('60606'), undefined);
});
