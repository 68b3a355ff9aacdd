import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findRecipientColumn, recipientKey } from './recipient-column.ts';

test('each usual name is found, in any case and spacing', () => {
  const names = ['to', 'TO', 'Phone', 'phone number', 'Phone Number', 'PHONE_NUMBER', 'phone-number', 'PhoneNumber', 'Mobile', 'mobile number', 'Mobile  Number', 'Cell', 'MSISDN', 'number', 'Recipient', ' phone '];
  for (const name of names) {
    assert.deepEqual(findRecipientColumn(['First Name', name, 'City']), { ok: true, index: 1, how: 'found' }, name);
  }
});

test('names that only contain a usual name are not taken for it', () => {
  for (const name of ['Phone type', 'Account number', 'Order number', 'Tonight', 'Recipients name', 'Cellar']) {
    assert.deepEqual(findRecipientColumn(['Name', name]), { ok: false, candidates: [] }, name);
  }
});

test('no usual name, or several: the candidates, to ask which one', () => {
  assert.deepEqual(findRecipientColumn(['Name', 'City']), { ok: false, candidates: [] });
  assert.deepEqual(findRecipientColumn([]), { ok: false, candidates: [] });
  assert.deepEqual(findRecipientColumn(['Name', 'Phone', 'Mobile', 'City']), { ok: false, candidates: [1, 2] });
  // The same name twice is as unclear as two names.
  assert.deepEqual(findRecipientColumn(['to', 'To']), { ok: false, candidates: [0, 1] });
});

test('a chosen column wins when the file has it; otherwise the names decide', () => {
  assert.deepEqual(findRecipientColumn(['Name', 'Phone', 'Mobile'], 'Mobile'), { ok: true, index: 2, how: 'chosen' });
  assert.deepEqual(findRecipientColumn(['Name', 'Phone', 'MOBILE'], 'mobile'), { ok: true, index: 2, how: 'chosen' });
  // Any column may be chosen, whatever its name.
  assert.deepEqual(findRecipientColumn(['Name', 'Contact'], 'Contact'), { ok: true, index: 1, how: 'chosen' });
  // Remembered from another file that this one lacks: found by name as usual.
  assert.deepEqual(findRecipientColumn(['Name', 'Cell'], 'Mobile'), { ok: true, index: 1, how: 'found' });
  assert.deepEqual(findRecipientColumn(['Name', 'Phone', 'Cell'], 'Mobile'), { ok: false, candidates: [1, 2] });
  assert.deepEqual(findRecipientColumn(['Name', 'Phone'], '  '), { ok: true, index: 1, how: 'found' });
});

test('recipientKey drops case, spaces, underscores, hyphens and dots', () => {
  assert.equal(recipientKey(' Mobile_No.-Number '), 'mobilenonumber');
});
