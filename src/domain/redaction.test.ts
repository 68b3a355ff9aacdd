import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMasked, maskNumber, redactPayload, rewritePayload } from './redaction.ts';

test('a number keeps all but its last four digits, which become XXXX, once', () => {
  assert.equal(maskNumber('+447700900123'), '+44770090XXXX');
  assert.equal(maskNumber('+14155550123'), '+1415555XXXX');
  assert.equal(maskNumber(maskNumber('+447700900123')), '+44770090XXXX');
  assert.equal(maskNumber('AcmeBank'), 'AcmeBank', 'an alphanumeric sender is not a number');
  assert.equal(isMasked('+44770090XXXX'), true);
  assert.equal(isMasked('+447700900123'), false);
});

test('a payload loses its text and the numbers named, wherever they are, and keeps its shape', () => {
  const delivery = JSON.stringify({ event: 'sms.delivered', message_id: 'msg_1', to: '+447700900123', from: 'Acme', status: 'delivered' });
  assert.deepEqual(JSON.parse(redactPayload(delivery, ['+447700900123'])), { event: 'sms.delivered', message_id: 'msg_1', to: '+44770090XXXX', from: 'Acme', status: 'delivered' });
  const received = JSON.stringify({ event: 'sms.received', data: { id: 'in_1', from: '+447700900123', to: '+447700900999', message: 'my PIN is 4711' } });
  const redacted = JSON.parse(redactPayload(received, ['+447700900123']));
  assert.deepEqual(redacted.data, { id: 'in_1', from: '+44770090XXXX', to: '+447700900999', message: '' }, 'the account’s own number (to) stays');
  assert.equal(redactPayload(redactPayload(received, ['+447700900123']), ['+447700900123']), redactPayload(received, ['+447700900123']));
});

test('rewritePayload masks numbers without the text, or removes the text alone', () => {
  const received = JSON.stringify({ event: 'sms.received', data: { from: '+447700900123', message: 'hello' } });
  assert.deepEqual(JSON.parse(rewritePayload(received, { text: false, numbers: ['+447700900123'] })).data, { from: '+44770090XXXX', message: 'hello' });
  assert.deepEqual(JSON.parse(rewritePayload(received, { text: true, numbers: [] })).data, { from: '+447700900123', message: '' });
});
