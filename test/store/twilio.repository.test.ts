/**
 * The queries of the Twilio-compatible API (accounts, messages and numbers repositories): an
 * account found by its SID, credentials made once however many ask at once, a token rotation, the
 * Messages list's filters and page token, a delete limited to final messages, a number's SMS URL.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MessagesTable } from '../../src/store/database.ts';
import * as accounts from '../../src/store/repositories/accounts.repository.ts';
import { deleteMessageIfIn, insertMessages, twilioMessagesPage } from '../../src/store/repositories/messages.repository.ts';
import { insertNumber, numberHolder, setNumberSmsUrl } from '../../src/store/repositories/numbers.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { addAccount } from './fixtures.ts';

const NOW = 1_750_000_000_000;

function message(accountId: string, i: number, patch: Partial<MessagesTable> = {}): MessagesTable {
  return {
    id: `msg_${String(i).padStart(26, '0')}`,
    account_id: accountId,
    batch_id: null,
    recipient: `+447700900${String(i).padStart(3, '0')}`,
    sender: 'Acme',
    body: `hello ${i}`,
    encoding: 'GSM-7',
    segments: 1,
    status: 'delivered',
    callback_url: null,
    carrier_message_id: null,
    error_code: null,
    error_message: null,
    created_at: NOW + Math.floor(i / 2),
    sent_at: NOW + i * 1000,
    delivered_at: null,
    updated_at: NOW,
    send_at: null,
    validity_period: null,
    expires_at: null,
    callback_format: null,
    ...patch,
  };
}

describe('twilio queries', () => {
  forEachDialect((_dialect, open) => {
    it('credentials are made once, found by SID, and rotated keeping the previous token', async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      await addAccount(store, 'acc_2');
      const tries = await Promise.all([1, 2, 3].map((n) => accounts.setFirstTwilioCredentials(store.db, 'acc_1', `AC${String(n).repeat(32)}`, String(n).repeat(32))));
      assert.equal(tries.filter(Boolean).length, 1, 'one of the parallel attempts wins');
      const made = (await accounts.twilioCredentialsOf(store.db, 'acc_1'))!;
      assert.match(made.twilio_sid!, /^AC(1{32}|2{32}|3{32})$/);
      assert.deepEqual(await accounts.accountByTwilioSid(store.db, made.twilio_sid!), made);
      assert.equal(await accounts.accountByTwilioSid(store.db, `AC${'9'.repeat(32)}`), undefined);
      await accounts.replaceTwilioToken(store.db, 'acc_1', 'f'.repeat(32), made.twilio_token!, NOW);
      const rotated = (await accounts.twilioCredentialsOf(store.db, 'acc_1'))!;
      assert.deepEqual(
        [rotated.twilio_sid, rotated.twilio_token, rotated.twilio_token_previous, Number(rotated.twilio_token_rotated_at)],
        [made.twilio_sid, 'f'.repeat(32), made.twilio_token, NOW],
      );
      // Two accounts cannot share a SID.
      await assert.rejects(accounts.setFirstTwilioCredentials(store.db, 'acc_2', made.twilio_sid!, '0'.repeat(32)));
    });

    it('the Messages list: newest first, filters, offset and the page token', async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      await addAccount(store, 'acc_2');
      await insertMessages(store.db, [
        ...Array.from({ length: 6 }, (_, i) => message('acc_1', i)),
        message('acc_1', 6, { sender: '+447700900999', sent_at: null, status: 'pending' }),
        message('acc_2', 7),
      ]);
      const ids = (rows: MessagesTable[]) => rows.map((r) => Number(r.id.slice(-3)));
      const page = (filter: Omit<Parameters<typeof twilioMessagesPage>[1], 'accountId'>, limit = 50, offset = 0) =>
        twilioMessagesPage(store.db, { accountId: 'acc_1', ...filter }, limit, offset);
      assert.deepEqual(ids(await page({})), [6, 5, 4, 3, 2, 1, 0]);
      assert.deepEqual(ids(await page({}, 2, 2)), [4, 3]);
      assert.deepEqual(ids(await page({ recipient: '+447700900003' })), [3]);
      assert.deepEqual(ids(await page({ sender: '+447700900999' })), [6]);
      assert.deepEqual(ids(await page({ sentFrom: NOW + 2000, sentUntil: NOW + 4000 })), [3, 2]);
      // Messages 4 and 5 share a created_at: the token's id breaks the tie.
      assert.deepEqual(ids(await page({ before: { createdAt: NOW + 2, id: message('acc_1', 5).id } }, 3)), [4, 3, 2]);
      const whole = (await page({}))[0]!;
      assert.equal(whole.callback_format, null);
      assert.equal(whole.body, 'hello 6');
    });

    it('a delete removes only a final message of the account, with its events and parts', async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      await insertMessages(store.db, [message('acc_1', 1), message('acc_1', 2, { status: 'sent' })]);
      await store.db
        .insertInto('webhook_events')
        .values({ id: 'evt_1', account_id: 'acc_1', message_id: message('acc_1', 1).id, batch_id: null, event: 'twilio.status', url: 'https://127.0.0.1/cb', payload: '{}', status: 'delivered', attempts: 1, last_error: null, created_at: NOW, updated_at: NOW })
        .execute();
      await store.db.insertInto('webhook_attempts').values({ id: 'wha_1', event_id: 'evt_1', attempt: 1, attempted_at: NOW, http_status: 200, error: null, latency_ms: 3 }).execute();
      const final = ['delivered', 'failed', 'canceled'] as const;
      assert.equal(await deleteMessageIfIn(store.db, 'acc_2', message('acc_1', 1).id, final), undefined, 'another account');
      assert.equal(await deleteMessageIfIn(store.db, 'acc_1', message('acc_1', 2).id, final), 'sent', 'not final: kept');
      assert.equal(await deleteMessageIfIn(store.db, 'acc_1', message('acc_1', 1).id, final), 'delivered');
      assert.equal(await deleteMessageIfIn(store.db, 'acc_1', message('acc_1', 1).id, final), undefined, 'gone');
      assert.deepEqual((await store.db.selectFrom('messages').select('id').execute()).map((r) => r.id), [message('acc_1', 2).id]);
      assert.equal((await store.db.selectFrom('webhook_events').selectAll().execute()).length, 0);
      assert.equal((await store.db.selectFrom('webhook_attempts').selectAll().execute()).length, 0);
    });

    it('a number’s SMS URL is set only by its holder and read with the holder', async () => {
      const store = await open();
      await addAccount(store, 'acc_1', { twilio_sid: `AC${'a'.repeat(32)}`, twilio_token: 'b'.repeat(32) });
      await insertNumber(store.db, { number: '+447700900555', account_id: 'acc_1', label: null, created_at: NOW });
      assert.equal(await setNumberSmsUrl(store.db, 'acc_2', '+447700900555', 'https://127.0.0.1/sms'), false);
      assert.equal(await setNumberSmsUrl(store.db, 'acc_1', '+447700900555', 'https://127.0.0.1/sms'), true);
      const holder = (await numberHolder(store.db, '+447700900555'))!;
      assert.equal(holder.sms_url, 'https://127.0.0.1/sms');
      assert.equal(holder.twilio_sid, `AC${'a'.repeat(32)}`);
    });
  });
});
