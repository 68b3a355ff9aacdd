import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canTransition, eventForStatus, isFinal, MESSAGE_STATUSES, type MessageStatus } from './message-status.ts';

test('MESSAGE_STATUSES lists the six statuses in lifecycle order and is frozen', () => {
  assert.deepEqual([...MESSAGE_STATUSES], ['scheduled', 'pending', 'sent', 'delivered', 'failed', 'canceled']);
  assert.ok(Object.isFrozen(MESSAGE_STATUSES));
});

test('canTransition: the full 6x6 matrix', () => {
  const none = { scheduled: false, pending: false, sent: false, delivered: false, failed: false, canceled: false };
  const allowed: Record<MessageStatus, Record<MessageStatus, boolean>> = {
    scheduled: { ...none, pending: true, canceled: true },
    pending: { ...none, sent: true, failed: true },
    sent: { ...none, delivered: true, failed: true },
    delivered: none,
    failed: none,
    canceled: none,
  };
  let checked = 0;
  for (const from of MESSAGE_STATUSES) {
    for (const to of MESSAGE_STATUSES) {
      assert.equal(canTransition(from, to), allowed[from][to], `${from} -> ${to}`);
      checked++;
    }
  }
  assert.equal(checked, 36);
});

test('nothing goes back to scheduled, and a released message can no longer be canceled', () => {
  for (const from of MESSAGE_STATUSES) assert.equal(canTransition(from, 'scheduled'), false, from);
  for (const from of MESSAGE_STATUSES) assert.equal(canTransition(from, 'canceled'), from === 'scheduled', from);
});

test('isFinal: delivered, failed and canceled only', () => {
  assert.deepEqual(
    MESSAGE_STATUSES.map((s) => [s, isFinal(s)]),
    [
      ['scheduled', false],
      ['pending', false],
      ['sent', false],
      ['delivered', true],
      ['failed', true],
      ['canceled', true],
    ],
  );
});

test('a final status allows no transition, a non-final one allows at least one', () => {
  for (const from of MESSAGE_STATUSES) {
    assert.equal(MESSAGE_STATUSES.some((to) => canTransition(from, to)), !isFinal(from), from);
  }
});

test('eventForStatus: scheduled, pending and canceled announce nothing, the others map to their event', () => {
  assert.equal(eventForStatus('scheduled'), null);
  assert.equal(eventForStatus('pending'), null);
  assert.equal(eventForStatus('canceled'), null);
  assert.equal(eventForStatus('sent'), 'sms.sent');
  assert.equal(eventForStatus('delivered'), 'sms.delivered');
  assert.equal(eventForStatus('failed'), 'sms.failed');
});

test('every status a carrier outcome reaches has an event', () => {
  for (const from of MESSAGE_STATUSES) {
    for (const to of MESSAGE_STATUSES) {
      if (canTransition(from, to) && to !== 'pending' && to !== 'canceled') assert.notEqual(eventForStatus(to), null, `${from} -> ${to}`);
    }
  }
});
