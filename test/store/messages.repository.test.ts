import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MessageStatus } from '../../src/domain/message-status.ts';
import { createAccount } from '../../src/services/accounts/accounts.ts';
import { applyStatusChanges, type StatusChange } from '../../src/services/messages/message-status-changes.ts';
import type { Store } from '../../src/store/connect.ts';
import type { MessagesTable } from '../../src/store/database.ts';
import type { NewJob } from '../../src/store/repositories/jobs.repository.ts';
import { creditBalance } from '../../src/store/repositories/ledger.repository.ts';
import {
  countMessagesQuery,
  insertMessages,
  listMessagesQuery,
  messagesByIds,
  moveMessage,
  moveMessages,
  staleSentMessages,
} from '../../src/store/repositories/messages.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { serviceContext } from '../helpers/test-store.ts';

const NOW = 1_800_000_000_000;

let accounts = 0;

/** An account of its own (one e-mail address per account). */
async function account(store: Store, credits = 0): Promise<string> {
  accounts += 1;
  return (await createAccount(serviceContext(store), { name: 'Acme', email: `ops${accounts}@example.com`, credits })).id;
}

function message(accountId: string, i: number, patch: Partial<MessagesTable> = {}): MessagesTable {
  return {
    id: `msg_${String(i).padStart(6, '0')}`,
    account_id: accountId,
    batch_id: null,
    recipient: `+4915100000${String(i).padStart(3, '0')}`,
    sender: 'ACME',
    body: `hello ${i}`,
    encoding: 'GSM-7',
    segments: 1,
    status: 'pending',
    callback_url: null,
    carrier_message_id: null,
    error_code: null,
    error_message: null,
    created_at: NOW + i,
    sent_at: null,
    delivered_at: null,
    updated_at: NOW + i,
    send_at: null,
    validity_period: null,
    expires_at: null,
    callback_format: null,
    ...patch,
  };
}

function sentMove(m: MessagesTable, at: number) {
  return { previous: m, next: { ...m, status: 'sent' as MessageStatus, sent_at: at, carrier_message_id: `c-${m.id}`, updated_at: at } };
}

forEachDialect((dialect, open) => {
  test('messages are stored and read back by id, with numbers as numbers', async () => {
    const store = await open();
    const acc = await account(store);
    const rows = Array.from({ length: 5 }, (_, i) => message(acc, i));
    await insertMessages(store.db, rows);
    const back = await messagesByIds(store.db, rows.map((r) => r.id).reverse());
    assert.deepEqual(
      back.sort((a, b) => a.id.localeCompare(b.id)),
      // `charged` (migration 013) defaults to 1: only opt-out confirmations are free. `credits`
      // (migration 022) is null on a row written without it, as on messages accepted before it;
      // no route has taken them yet (migration 023); no category was given (migration 031); none
      // is held by quiet hours (migration 033); none named its callback's events (migration 038).
      rows.map((r) => ({ ...r, charged: 1, credits: null, route: null, route_cost: null, routes_tried: null, category: null, held_until: null, callback_events: null })),
    );
  });

  test('a move is guarded by the previous status: the second of two identical moves changes nothing', async () => {
    const store = await open();
    const acc = await account(store);
    const m = message(acc, 1);
    await insertMessages(store.db, [m]);
    assert.equal(await moveMessage(store.db, sentMove(m, NOW + 10), NOW + 10), true);
    assert.equal(await moveMessage(store.db, sentMove(m, NOW + 20), NOW + 20), false);
    const [back] = await messagesByIds(store.db, [m.id]);
    assert.equal(back!.status, 'sent');
    assert.equal(back!.sent_at, NOW + 10);
    assert.equal(back!.carrier_message_id, `c-${m.id}`);
  });

  test(`many moves at once (${dialect === 'postgres' ? 'batched UPDATEs' : 'one prepared UPDATE each'}): only messages still in their previous status move, each with its own values`, async () => {
    const store = await open();
    const acc = await account(store);
    // More than one batch of a hundred, in two pairs of statuses, and some already moved.
    const pending = Array.from({ length: 150 }, (_, i) => message(acc, i));
    const sent = Array.from({ length: 30 }, (_, i) => message(acc, 1000 + i, { status: 'sent', sent_at: NOW, carrier_message_id: `c-${i}` }));
    await insertMessages(store.db, [...pending, ...sent]);
    const stale = pending.slice(0, 10);
    for (const m of stale) assert.equal(await moveMessage(store.db, sentMove(m, NOW + 1), NOW + 1), true);
    const moves = [
      ...pending.map((m, i) => sentMove(m, NOW + 100 + i)),
      ...sent.map((m, i) => ({
        previous: m,
        next: { ...m, status: (i % 2 ? 'delivered' : 'failed') as MessageStatus, delivered_at: i % 2 ? NOW + 200 + i : null, error_code: i % 2 ? null : `E${i}`, error_message: i % 2 ? null : `no ${i}`, updated_at: NOW + 300 },
      })),
    ];
    const moved = await store.db.transaction().execute((trx) => moveMessages(trx, moves, NOW + 300));
    assert.equal(moved.size, 140 + 30);
    for (const m of stale) assert.equal(moved.has(m.id), false);
    const back = new Map((await messagesByIds(store.db, [...pending, ...sent].map((m) => m.id))).map((m) => [m.id, m]));
    for (const [i, m] of pending.entries()) {
      const row = back.get(m.id)!;
      assert.equal(row.status, 'sent');
      assert.equal(row.sent_at, i < 10 ? NOW + 1 : NOW + 100 + i);
      assert.equal(row.updated_at, i < 10 ? NOW + 1 : NOW + 300);
    }
    for (const [i, m] of sent.entries()) {
      const row = back.get(m.id)!;
      assert.equal(row.status, i % 2 ? 'delivered' : 'failed');
      assert.equal(row.sent_at, NOW);
      assert.equal(row.delivered_at, i % 2 ? NOW + 200 + i : null);
      assert.equal(row.error_code, i % 2 ? null : `E${i}`);
      assert.equal(row.error_message, i % 2 ? null : `no ${i}`);
      assert.equal(row.carrier_message_id, `c-${i}`);
    }
  });

  test('status changes: refund for a message refused before it was sent, a webhook event and its job per callback, a repeated message changed once', async () => {
    const store = await open();
    const acc = await account(store, 10);
    const a = message(acc, 1, { callback_url: 'https://127.0.0.1/hook', segments: 3 });
    const b = message(acc, 2, { status: 'sent', sent_at: NOW });
    const c = message(acc, 3);
    await insertMessages(store.db, [a, b, c]);
    const items: { message: MessagesTable; change: StatusChange }[] = [
      { message: a, change: { to: 'failed', at: NOW + 5, errorCode: 'rejected', errorMessage: 'Refused.' } },
      { message: b, change: { to: 'delivered', at: NOW + 6 } },
      { message: c, change: { to: 'sent', at: NOW + 7, carrierMessageId: 'c-3' } },
      // Named again with the same snapshot: its guard no longer holds once the first applied.
      { message: c, change: { to: 'sent', at: NOW + 8, carrierMessageId: 'c-3b' } },
      // Not a transition the state machine allows.
      { message: b, change: { to: 'pending' as MessageStatus, at: NOW + 9 } },
    ];
    const followUps: NewJob[] = [];
    const out = await store.db.transaction().execute((trx) => applyStatusChanges(trx, items, NOW + 10, followUps));
    assert.deepEqual(
      out.map((m) => m?.status ?? null),
      ['failed', 'delivered', 'sent', null, null],
    );
    const back = new Map((await messagesByIds(store.db, [a.id, b.id, c.id])).map((m) => [m.id, m]));
    assert.equal(back.get(a.id)!.error_code, 'rejected');
    assert.equal(back.get(b.id)!.delivered_at, NOW + 6);
    assert.equal(back.get(c.id)!.carrier_message_id, 'c-3');
    // The three segments of the refused message came back.
    assert.equal(await creditBalance(store.db, acc), 13);
    const events = await store.db.selectFrom('webhook_events').selectAll().execute();
    assert.equal(events.length, 1);
    assert.equal(events[0]!.message_id, a.id);
    assert.equal(JSON.parse(events[0]!.payload).status, 'failed');
    assert.deepEqual(followUps, [{ queue: 'webhook', ref: events[0]!.id, runAt: NOW + 10 }]);
  });

  test('sent messages older than a cutoff are found for expiry, up to a limit', async () => {
    const store = await open();
    const acc = await account(store);
    await insertMessages(store.db, [
      message(acc, 1, { status: 'sent', sent_at: NOW - 3000 }),
      message(acc, 2, { status: 'sent', sent_at: NOW - 2000 }),
      message(acc, 3, { status: 'sent', sent_at: NOW }),
      message(acc, 4, { status: 'delivered', sent_at: NOW - 5000, delivered_at: NOW - 4000 }),
    ]);
    const stale = await staleSentMessages(store.db, NOW - 1000, 10);
    assert.deepEqual(stale.map((m) => m.id).sort(), ['msg_000001', 'msg_000002']);
    assert.equal((await staleSentMessages(store.db, NOW - 1000, 1)).length, 1);
  });

  test('delivery reports: filtered pages, newest first, and their total', async () => {
    const store = await open();
    const acc = await account(store);
    const other = await account(store);
    await insertMessages(store.db, [
      ...Array.from({ length: 7 }, (_, i) => message(acc, i, { batch_id: i < 4 ? 'bat_1' : null, status: i % 2 ? 'delivered' : 'sent' })),
      message(other, 100),
    ]);
    const total = async (filter: Parameters<typeof countMessagesQuery>[1]) => Number((await countMessagesQuery(store.db, filter).executeTakeFirstOrThrow()).total);
    assert.equal(await total({ accountId: acc }), 7);
    assert.equal(await total({ accountId: acc, batchId: 'bat_1' }), 4);
    assert.equal(await total({ accountId: acc, status: 'delivered' }), 3);
    const page = await listMessagesQuery(store.db, { accountId: acc }, 3, 2).execute();
    assert.deepEqual(
      page.map((r) => r.id),
      ['msg_000004', 'msg_000003', 'msg_000002'],
    );
    assert.equal(typeof page[0]!.created_at, 'number');
    assert.equal('body' in page[0]!, false);
  });
});
