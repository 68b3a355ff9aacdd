import { test } from 'node:test';
import assert from 'node:assert/strict';
import { submitErrorFor, isTransientStatus } from './smpp-status.ts';
import { TokenBucket } from './token-bucket.ts';

test('SMPP statuses: throttling is transient, the rest name the status', () => {
  assert.ok(isTransientStatus(0x58) && isTransientStatus(0x14));
  assert.ok(!isTransientStatus(0x0b));
  assert.equal(submitErrorFor(0x0b).errorCode, 'smpp_rinvdstadr');
  assert.match(submitErrorFor(0x0b).errorMessage, /ESME_RINVDSTADR \(0x0000000B\)/);
  assert.equal(submitErrorFor(0x400).errorCode, 'smpp_status_0x00000400');
});

test('the TPS bucket allows a tenth of a second in a burst, then paces', () => {
  const bucket = new TokenBucket(100);
  let taken = 0;
  while (bucket.take(1000)) taken++;
  assert.equal(taken, 10);
  assert.equal(bucket.waitMs(1000), 10);
  assert.ok(bucket.take(1010));
  assert.ok(!bucket.take(1010));
});
