/** What a new account has done so far: each fact comes from the account's own rows only. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Store } from '../../src/store/connect.ts';
import type { SenderIdStatus, WebhookEventStatus } from '../../src/store/database.ts';
import { insertApiKey } from '../../src/store/repositories/api-keys.repository.ts';
import { insertLedgerRows } from '../../src/store/repositories/ledger.repository.ts';
import { insertMessages } from '../../src/store/repositories/messages.repository.ts';
import { onboardingFacts } from '../../src/store/repositories/onboarding.repository.ts';
import { insertSenderId } from '../../src/store/repositories/sender-ids.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { addAccount } from './fixtures.ts';

const NOTHING = { credits: 0, toppedUp: false, senderIds: { approved: false, pending: false }, hasKey: false, hasMessage: false, webhookDelivered: false };

async function senderId(store: Store, id: string, accountId: string, status: SenderIdStatus) {
  await insertSenderId(store.db, { id, account_id: accountId, name: id, name_key: id.toUpperCase(), status, review_note: null, created_at: 1, updated_at: 1 });
}

async function message(store: Store, id: string, accountId: string) {
  await insertMessages(store.db, [
    {
      id,
      account_id: accountId,
      batch_id: null,
      recipient: '+14155550100',
      sender: 'PIGEON',
      body: 'hi',
      encoding: 'GSM-7',
      segments: 1,
      status: 'delivered',
      callback_url: 'http://127.0.0.1:9/cb',
      carrier_message_id: null,
      error_code: null,
      error_message: null,
      created_at: 1,
      sent_at: null,
      delivered_at: null,
      updated_at: 1,
      send_at: null,
      validity_period: null,
      expires_at: null,
    },
  ]);
}

async function webhookEvent(store: Store, id: string, accountId: string, messageId: string, status: WebhookEventStatus) {
  await store.db
    .insertInto('webhook_events')
    .values({ id, account_id: accountId, message_id: messageId, batch_id: null, event: 'message.delivered', url: 'http://127.0.0.1:9/cb', payload: '{}', status, attempts: 1, last_error: null, created_at: 1, updated_at: 1 })
    .execute();
}

describe('onboarding repository', () => {
  forEachDialect((_dialect, open) => {
    it('a new account has done nothing yet; an unknown one reads the same', async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      assert.deepEqual(await onboardingFacts(store.db, 'acc_1'), NOTHING);
      assert.deepEqual(await onboardingFacts(store.db, 'acc_none'), NOTHING);
    });

    it("sees each step as the account takes it, and none of another account's", async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      await addAccount(store, 'acc_2', { credits: 50 });
      // Everything done by acc_2 only.
      await insertLedgerRows(store.db, [{ id: 'led_2', account_id: 'acc_2', amount: 50, kind: 'topup', reference: null, note: null, created_at: 1 }]);
      await senderId(store, 'sid_2a', 'acc_2', 'approved');
      await senderId(store, 'sid_2p', 'acc_2', 'pending');
      await insertApiKey(store.db, { id: 'key_2', account_id: 'acc_2', label: 'k', prefix: 'pk_', digest: 'd2', scopes: 'messages:send', created_at: 1, last_used_at: null, revoked_at: null });
      await message(store, 'msg_2', 'acc_2');
      await webhookEvent(store, 'evt_2', 'acc_2', 'msg_2', 'delivered');
      assert.deepEqual(await onboardingFacts(store.db, 'acc_1'), NOTHING);
      assert.deepEqual(await onboardingFacts(store.db, 'acc_2'), {
        credits: 50,
        toppedUp: true,
        senderIds: { approved: true, pending: true },
        hasKey: true,
        hasMessage: true,
        webhookDelivered: true,
      });

      // acc_1, step by step. A rejected Sender ID is neither approved nor pending.
      await senderId(store, 'sid_1r', 'acc_1', 'rejected');
      assert.deepEqual((await onboardingFacts(store.db, 'acc_1')).senderIds, { approved: false, pending: false });
      await senderId(store, 'sid_1p', 'acc_1', 'pending');
      assert.deepEqual((await onboardingFacts(store.db, 'acc_1')).senderIds, { approved: false, pending: true });
      await insertApiKey(store.db, { id: 'key_1', account_id: 'acc_1', label: 'k', prefix: 'pk_', digest: 'd1', scopes: 'messages:send', created_at: 1, last_used_at: null, revoked_at: null });
      await message(store, 'msg_1', 'acc_1');
      // A webhook not (yet) delivered does not count.
      await webhookEvent(store, 'evt_1a', 'acc_1', 'msg_1', 'pending');
      await webhookEvent(store, 'evt_1b', 'acc_1', 'msg_1', 'undelivered');
      assert.deepEqual(await onboardingFacts(store.db, 'acc_1'), { ...NOTHING, senderIds: { approved: false, pending: true }, hasKey: true, hasMessage: true });
      await webhookEvent(store, 'evt_1c', 'acc_1', 'msg_1', 'delivered');
      assert.equal((await onboardingFacts(store.db, 'acc_1')).webhookDelivered, true);
    });

    it('counts as topped up on a top-up row even with no credits left, or on credits without a top-up row', async () => {
      const store = await open();
      await addAccount(store, 'acc_spent');
      await addAccount(store, 'acc_given', { credits: 7 });
      await addAccount(store, 'acc_refund');
      await insertLedgerRows(store.db, [
        { id: 'led_1', account_id: 'acc_spent', amount: 10, kind: 'topup', reference: null, note: null, created_at: 1 },
        { id: 'led_2', account_id: 'acc_spent', amount: -10, kind: 'debit', reference: 'msg_x', note: null, created_at: 2 },
        { id: 'led_3', account_id: 'acc_refund', amount: 1, kind: 'refund', reference: 'msg_y', note: null, created_at: 3 },
        { id: 'led_4', account_id: 'acc_refund', amount: -1, kind: 'adjustment', reference: null, note: null, created_at: 4 },
      ]);
      assert.deepEqual(await onboardingFacts(store.db, 'acc_spent'), { ...NOTHING, toppedUp: true });
      assert.deepEqual(await onboardingFacts(store.db, 'acc_given'), { ...NOTHING, credits: 7, toppedUp: true });
      // Ledger rows other than top-ups do not count as a top-up.
      assert.deepEqual(await onboardingFacts(store.db, 'acc_refund'), NOTHING);
    });
  });
});
