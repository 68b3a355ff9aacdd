import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canTransition, eventForStatus, isFinal, MESSAGE_STATUSES, type MessageStatus } from './message-status.ts';

test('MESSAGE_STATUSES lists the four statuses in lifecycle order and is frozen', () => {
  assert.deepEqual([...MESSAGE_STATUSES], ['pending', 'sent', 'delivered', 'failed']);
  assert.ok(Object.isFrozen(MESSAGE_STATUSES));
});

test('canTransition: the full 4x4 matrix', () => {
  const allowed: Record<MessageStatus, Record<MessageStatus, boolean>> = {
    pending: { pending: false, sent: true, delivered: false, failed: true },
    sent: { pending: false, sent: false, delivered: true, failed: true },
    delivered: { pending: false, sent: false, delivered: false, failed: false },
    failed: { pending: false, sent: false, delivered: false, failed: false },
  };
  let checked = 0;
  for (const from of MESSAGE_STATUSES) {
    for (const to of MESSAGE_STATUSES) {
      assert.equal(canTransition(from, to), allowed[from][to], `${from} -> ${to}`);
      checked++;
    }
  }
  assert.equal(checked, 16);
});

test('isFinal: delivered and failed only', () => {
  assert.deepEqual(
    MESSAGE_STATUSES.map((s) => [s, isFinal(s)]),
    [['pending', false], ['sent', false], ['delivered', true], ['failed', true]],
  );
});

test('a final status allows no transition, a non-final one allows at least one', () => {
  for (const from of MESSAGE_STATUSES) {
    assert.equal(MESSAGE_STATUSES.some((to) => canTransition(from, to)), !isFinal(from), from);
  }
});

test('eventForStatus: pending announces nothing, the others map to their event', () => {
  assert.equal(eventForStatus('pending'), null);
  assert.equal(eventForStatus('sent'), 'sms.sent');
  assert.equal(eventForStatus('delivered'), 'sms.delivered');
  assert.equal(eventForStatus('failed'), 'sms.failed');
});

test('every reachable status has an event', () => {
  for (const from of MESSAGE_STATUSES) {
    for (const to of MESSAGE_STATUSES) {
      if (canTransition(from, to)) assert.notEqual(eventForStatus(to), null, `${from} -> ${to}`);
    }
  }
});
