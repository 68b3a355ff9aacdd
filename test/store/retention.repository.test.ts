import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MessagesTable } from '../../src/store/database.ts';
import { insertMessages } from '../../src/store/repositories/messages.repository.ts';
import {
  addDailyTotals,
  deleteMessagesWithRecords,
  finalMessagesToNumber,
  inboundFromNumber,
  liveUsage,
  messagesAfter,
  retentionCursor,
  setRetentionCursor,
  totalsBetween,
} from '../../src/store/repositories/retention.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { insertAccount } from './fixtures.ts';

const DAY = 86_400_000;

function message(id: string, createdAt: number, over: Partial<MessagesTable> = {}): MessagesTable {
  return {
    id,
    account_id: 'acc_a',
    batch_id: null,
    recipient: '+447700900001',
    sender: 'Acme',
    body: 'hello',
    encoding: 'GSM-7',
    segments: 1,
    status: 'delivered',
    callback_url: null,
    carrier_message_id: null,
    error_code: null,
    error_message: null,
    created_at: createdAt,
    sent_at: createdAt,
    delivered_at: createdAt,
    updated_at: createdAt,
    send_at: null,
    validity_period: null,
    expires_at: null,
    ...over,
  };
}

forEachDialect((_dialect, open) => {
  test('daily totals add up on a repeat of the same day, country and status', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    const row = { account_id: 'acc_a', day: 10, country: '44', status: 'delivered' as const, messages: 2, segments: 3, credits: 3 };
    await addDailyTotals(store.db, [row]);
    await addDailyTotals(store.db, [row, { ...row, country: '1', messages: 1, segments: 1, credits: 0 }]);
    const totals = (await totalsBetween(store.db, 'acc_a', 0, 20)).sort((a, b) => a.prefix.localeCompare(b.prefix));
    assert.deepEqual(totals, [
      { day: 10, prefix: '1', status: 'delivered', messages: 1, segments: 1, credits: 0 },
      { day: 10, prefix: '44', status: 'delivered', messages: 4, segments: 6, credits: 6 },
    ]);
    assert.deepEqual(await totalsBetween(store.db, 'acc_a', 11, 20), []);
  });
  test('messages after a (time, id) cursor, oldest first, before a cutoff; the cursor is kept per account and kind', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertMessages(store.db, [message('msg_b', 100), message('msg_a', 100), message('msg_c', 200), message('msg_d', 300)]);
    assert.deepEqual((await messagesAfter(store.db, 'acc_a', { at: -1, id: '' }, 300, 10)).map((m) => m.id), ['msg_a', 'msg_b', 'msg_c']);
    assert.deepEqual((await messagesAfter(store.db, 'acc_a', { at: 100, id: 'msg_a' }, 1000, 2)).map((m) => m.id), ['msg_b', 'msg_c']);
    assert.deepEqual(await retentionCursor(store.db, 'acc_a', 'body'), { at: -1, id: '' });
    await setRetentionCursor(store.db, 'acc_a', 'body', 100, 'msg_b');
    await setRetentionCursor(store.db, 'acc_a', 'body', 200, 'msg_c');
    assert.deepEqual(await retentionCursor(store.db, 'acc_a', 'body'), { at: 200, id: 'msg_c' });
    assert.deepEqual(await retentionCursor(store.db, 'acc_a', 'mask'), { at: -1, id: '' });
  });

  test('deleting takes final messages only, with their events and attempts, and says which went', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertMessages(store.db, [message('msg_1', 100), message('msg_2', 100, { status: 'sent' }), message('msg_3', 100, { status: 'canceled' })]);
    await store.db
      .insertInto('webhook_events')
      .values({ id: 'evt_1', account_id: 'acc_a', message_id: 'msg_1', inbound_id: null, batch_id: null, event: 'sms.delivered', url: 'https://127.0.0.1:9/', payload: '{}', status: 'delivered', attempts: 1, last_error: null, created_at: 1, updated_at: 1 })
      .execute();
    await store.db.insertInto('webhook_attempts').values({ id: 'att_1', event_id: 'evt_1', attempt: 1, attempted_at: 1, http_status: 200, error: null, latency_ms: 1 }).execute();
    const { deleted, events } = await deleteMessagesWithRecords(store.db, ['msg_1', 'msg_2', 'msg_3']);
    assert.deepEqual(deleted.sort(), ['msg_1', 'msg_3']);
    assert.equal(events, 1);
    assert.deepEqual((await store.db.selectFrom('messages').select('id').execute()).map((r) => r.id), ['msg_2']);
    assert.equal((await store.db.selectFrom('webhook_attempts').selectAll().execute()).length, 0);
    assert.deepEqual((await deleteMessagesWithRecords(store.db, ['msg_1'])).deleted, [], 'gone already: counted by nobody again');
  });

  test('live usage groups by day, the number’s first digits, status and what decides a refund; a number’s messages and inbound', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertMessages(store.db, [
      // `credits` null: accepted before prices, one credit a segment.
      message('msg_1', DAY + 5, { segments: 2, credits: null }),
      // Priced by a rate card at acceptance: its credits, not its segments.
      message('msg_2', DAY + 6, { recipient: '+14155550100', credits: 7 }),
      message('msg_3', DAY + 7, { status: 'failed', sent_at: null, credits: null }),
      message('msg_4', 3 * DAY, { recipient: '+447700900002', credits: null }),
    ]);
    const rows = (await liveUsage(store.db, 'acc_a', DAY, 2 * DAY, DAY)).sort((a, b) => a.prefix.localeCompare(b.prefix) || a.status.localeCompare(b.status));
    assert.deepEqual(rows, [
      { day: 1, prefix: '141', status: 'delivered', free: 0, unsent: 0, messages: 1, segments: 1, credits: 7 },
      { day: 1, prefix: '447', status: 'delivered', free: 0, unsent: 0, messages: 1, segments: 2, credits: 2 },
      { day: 1, prefix: '447', status: 'failed', free: 0, unsent: 1, messages: 1, segments: 1, credits: 1 },
    ]);
    assert.deepEqual((await finalMessagesToNumber(store.db, 'acc_a', '+447700900001', 10)).map((m) => m.id).sort(), ['msg_1', 'msg_3']);
    await store.db.insertInto('inbound_messages').values({ id: 'in_1', account_id: null, sender: '+447700900001', recipient: '+447700900999', body: 'x', encoding: 'GSM-7', segments: 1, incomplete: 0, received_at: 1 }).execute();
    assert.deepEqual(await inboundFromNumber(store.db, null, '+447700900001', 10), [{ id: 'in_1' }], 'unrouted');
    assert.deepEqual(await inboundFromNumber(store.db, 'acc_a', '+447700900001', 10), []);
  });
});
