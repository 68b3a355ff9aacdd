import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rawDlrDate, rfc2822, twilioErrorCode, twilioPrice, twilioStatus, TWILIO_DELIVERY_ERRORS } from './twilio-message.ts';

test('statuses: pending is queued; a failure after sent is undelivered, before it failed', () => {
  assert.equal(twilioStatus('scheduled', null), 'scheduled');
  assert.equal(twilioStatus('pending', null), 'queued');
  assert.equal(twilioStatus('sent', 1), 'sent');
  assert.equal(twilioStatus('delivered', 1), 'delivered');
  assert.equal(twilioStatus('failed', 1), 'undelivered');
  assert.equal(twilioStatus('failed', null), 'failed');
  assert.equal(twilioStatus('canceled', null), 'canceled');
});

test('failure codes map to the five Twilio delivery codes, unknown ones to 30008', () => {
  assert.equal(twilioErrorCode('subscriber_unreachable'), 30003);
  assert.equal(twilioErrorCode('expired'), 30003);
  assert.equal(twilioErrorCode('smpp_rinvdstadr'), 30005);
  assert.equal(twilioErrorCode('no_route'), 30006);
  assert.equal(twilioErrorCode('carrier_rejected'), 30007);
  assert.equal(twilioErrorCode('recipient_opted_out'), 30007);
  assert.equal(twilioErrorCode('smpp_status_0x00000400'), 30008);
  assert.equal(twilioErrorCode('unknown'), 30008);
  assert.equal(twilioErrorCode(null), 30008);
  assert.deepEqual(Object.keys(TWILIO_DELIVERY_ERRORS), ['30003', '30005', '30006', '30007', '30008']);
});

test('dates are RFC 2822 with +0000; receipts YYMMDDhhmm; prices negative with two decimals', () => {
  assert.equal(rfc2822(Date.UTC(2026, 10, 26, 7, 3, 9)), 'Thu, 26 Nov 2026 07:03:09 +0000');
  assert.equal(rawDlrDate(Date.UTC(2026, 0, 2, 3, 4, 59)), '2601020304');
  assert.equal(twilioPrice(2), '-2.00');
  assert.equal(twilioPrice(0), '0.00');
});
