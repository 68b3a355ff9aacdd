import { test } from 'node:test';
import assert from 'node:assert/strict';
import { creditsKept, cutoff, DAY_MS, effectiveRetention, retentionRefusal, totalsOf } from './retention.ts';

const INSTALL = { bodyDays: 30, messageDays: 400, maskNumbersDays: 0 };

test('an account follows the installation unless it is set shorter; never longer', () => {
  assert.deepEqual(effectiveRetention(INSTALL, { bodyDays: null, messageDays: null, maskNumbersDays: null }), { bodyDays: 30, messageDays: 400, maskNumbersDays: null });
  assert.deepEqual(effectiveRetention(INSTALL, { bodyDays: 0, messageDays: 90, maskNumbersDays: 60 }), { bodyDays: 0, messageDays: 90, maskNumbersDays: 60 });
  // The installation shortened after the account was set: the shorter wins.
  assert.deepEqual(effectiveRetention({ bodyDays: 7, messageDays: 30, maskNumbersDays: 10 }, { bodyDays: 20, messageDays: null, maskNumbersDays: 60 }), { bodyDays: 7, messageDays: 30, maskNumbersDays: 10 });
});

test('a longer setting is refused with the variable it exceeds; masking is free to set when the installation never masks', () => {
  assert.equal(retentionRefusal(INSTALL, { bodyDays: 30, messageDays: 0 }), null);
  assert.match(retentionRefusal(INSTALL, { bodyDays: 31 }) ?? '', /--body-days 31 is longer than the installation's RETENTION_BODY_DAYS \(30 days\)/);
  assert.match(retentionRefusal(INSTALL, { messageDays: 401 }) ?? '', /RETENTION_MESSAGE_DAYS/);
  assert.equal(retentionRefusal(INSTALL, { maskNumbersDays: 5000 }), null);
  assert.match(retentionRefusal({ ...INSTALL, maskNumbersDays: 90 }, { maskNumbersDays: 91 }) ?? '', /RETENTION_MASK_NUMBERS_DAYS/);
  assert.equal(retentionRefusal(INSTALL, { bodyDays: null }), null, 'back to the default');
});

test('0 days is everything before now', () => {
  assert.equal(cutoff(1_000_000, 0), 1_000_000);
  assert.equal(cutoff(10 * DAY_MS, 3), 7 * DAY_MS);
});

test('credits kept follow the refunds: canceled, refused before sent and free messages keep none', () => {
  assert.equal(creditsKept({ status: 'delivered', segments: 3, sent_at: 1 }), 3);
  assert.equal(creditsKept({ status: 'failed', segments: 2, sent_at: 1 }), 2, 'failed after it left: charged');
  assert.equal(creditsKept({ status: 'failed', segments: 2, sent_at: null }), 0);
  // The price fixed at acceptance (a rate card's), not one credit per segment.
  assert.equal(creditsKept({ status: 'delivered', segments: 3, credits: 12, sent_at: 1 }), 12);
  assert.equal(creditsKept({ status: 'delivered', segments: 3, credits: 0, sent_at: 1 }), 0, 'a free destination');
  assert.equal(creditsKept({ status: 'canceled', segments: 3, credits: 12, sent_at: null }), 0);
  assert.equal(creditsKept({ status: 'canceled', segments: 2, sent_at: null }), 0);
  assert.equal(creditsKept({ status: 'delivered', segments: 1, sent_at: 1, charged: 0 }), 0);
});

test('messages sum per account, UTC day, calling code and status', () => {
  const m = (account_id: string, created_at: number, recipient: string, status: 'delivered' | 'failed', segments = 1) => ({ account_id, created_at, recipient, status, segments, sent_at: 1 });
  const totals = totalsOf([m('a', 0, '+447700900001', 'delivered', 2), m('a', 1000, '+44770090XXXX', 'delivered'), m('a', DAY_MS, '+447700900001', 'delivered'), m('a', 0, '+14155550100', 'failed'), m('b', 0, '+447700900001', 'delivered')]);
  assert.deepEqual(
    totals.map((t) => [t.accountId, t.day, t.country, t.status, t.messages, t.segments, t.credits]),
    [
      ['a', 0, '44', 'delivered', 2, 3, 3],
      ['a', 1, '44', 'delivered', 1, 1, 1],
      ['a', 0, '1', 'failed', 1, 1, 1],
      ['b', 0, '44', 'delivered', 1, 1, 1],
    ],
  );
});
