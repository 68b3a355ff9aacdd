import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Store } from '../../src/store/connect.ts';
import type { MessagesTable } from '../../src/store/database.ts';
import { insertMessages } from '../../src/store/repositories/messages.repository.ts';
import { approvedSenderKeysAmong, insertSenderId } from '../../src/store/repositories/sender-ids.repository.ts';
import { accountStatuses } from '../../src/store/repositories/accounts.repository.ts';
import { insertNumber, numbersHeldAmong } from '../../src/store/repositories/numbers.repository.ts';
import {
  accountHasBatch,
  accountHasMessage,
  cancelScheduledMessages,
  countScheduled,
  nextSendAt,
  releaseDueMessages,
  stageDispatch,
  withdrawDispatch,
} from '../../src/store/repositories/scheduled-messages.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { addAccount } from './fixtures.ts';

const NOW = 1_800_000_000_000;

function scheduled(accountId: string, i: number, sendAt: number, patch: Partial<MessagesTable> = {}): MessagesTable {
  return {
    id: `msg_${String(i).padStart(4, '0')}`,
    account_id: accountId,
    batch_id: null,
    recipient: `+4915100000${String(i).padStart(3, '0')}`,
    sender: 'Acme',
    body: `hello ${i}`,
    encoding: 'GSM-7',
    segments: 1 + (i % 2),
    status: 'scheduled',
    callback_url: null,
    carrier_message_id: null,
    error_code: null,
    error_message: null,
    created_at: NOW - 1000,
    sent_at: null,
    delivered_at: null,
    updated_at: NOW - 1000,
    send_at: sendAt,
    validity_period: null,
    expires_at: null,
    ...patch,
  };
}

async function statuses(store: Store) {
  return Object.fromEntries((await store.db.selectFrom('messages').select(['id', 'status']).orderBy('id').execute()).map((r) => [r.id, r.status]));
}

forEachDialect((dialect, open) => {
  test('releaseDueMessages moves at most `limit` due messages, earliest due first, to pending and returns them whole', async () => {
    const store = await open();
    await addAccount(store, 'acc_a');
    await insertMessages(store.db, [
      scheduled('acc_a', 1, NOW - 10),
      scheduled('acc_a', 2, NOW - 30),
      scheduled('acc_a', 3, NOW),
      scheduled('acc_a', 4, NOW + 1),
      scheduled('acc_a', 5, NOW - 20, { status: 'canceled' }),
    ]);
    assert.equal(await nextSendAt(store.db), NOW - 30);
    const first = await store.db.transaction().execute((trx) => releaseDueMessages(trx, NOW, 2));
    assert.deepEqual(first, [
      { id: 'msg_0002', account_id: 'acc_a', sender: 'Acme', recipient: '+4915100000002', send_at: NOW - 30, charged: 1 },
      { id: 'msg_0001', account_id: 'acc_a', sender: 'Acme', recipient: '+4915100000001', send_at: NOW - 10, charged: 1 },
    ]);
    const moved = await store.db.selectFrom('messages').select(['id', 'status', 'updated_at']).where('id', 'in', ['msg_0001', 'msg_0002']).orderBy('id').execute();
    assert.deepEqual(moved.map((m) => [m.id, m.status, Number(m.updated_at)]), [
      ['msg_0001', 'pending', NOW],
      ['msg_0002', 'pending', NOW],
    ]);
    const jobs = await store.db.selectFrom('jobs').select(['queue', 'ref', 'run_at', 'attempts']).orderBy('ref').execute();
    assert.deepEqual(jobs.map((j) => [j.queue, j.ref, Number(j.run_at), j.attempts]), [
      ['dispatch', 'msg_0001', NOW, 0],
      ['dispatch', 'msg_0002', NOW, 0],
    ], 'their dispatch jobs are enqueued with them');
    const rest = await store.db.transaction().execute((trx) => releaseDueMessages(trx, NOW, 100));
    assert.deepEqual(rest.map((m) => m.id), ['msg_0003'], 'due at exactly now; not the later one, nor the canceled one');
    assert.deepEqual(await store.db.transaction().execute((trx) => releaseDueMessages(trx, NOW, 100)), []);
    assert.equal(await nextSendAt(store.db), NOW + 1);
    assert.equal(await countScheduled(store.db), 1);
    assert.deepEqual(await statuses(store), { msg_0001: 'pending', msg_0002: 'pending', msg_0003: 'pending', msg_0004: 'scheduled', msg_0005: 'canceled' });
    await store.db.transaction().execute((trx) => withdrawDispatch(trx, ['msg_0001', 'msg_0003']));
    assert.deepEqual((await store.db.selectFrom('jobs').select('ref').execute()).map((j) => j.ref), ['msg_0002'], 'withdrawn');
  });

  test('stageDispatch writes the jobs of messages due in (from, until], in due order after a key, each once; the release keeps them', async () => {
    const store = await open();
    await addAccount(store, 'acc_a');
    await insertMessages(store.db, [
      scheduled('acc_a', 1, NOW),
      scheduled('acc_a', 2, NOW + 10),
      scheduled('acc_a', 3, NOW + 10),
      scheduled('acc_a', 4, NOW + 20),
      scheduled('acc_a', 5, NOW + 31),
      scheduled('acc_a', 6, NOW + 15, { status: 'canceled' }),
    ]);
    const stage = (after: Parameters<typeof stageDispatch>[3], limit: number) => store.db.transaction().execute((trx) => stageDispatch(trx, NOW, NOW + 30, after, limit));
    const first = await stage(undefined, 2);
    assert.deepEqual(first, { looked: 2, last: { sendAt: NOW + 10, id: 'msg_0003' } }, 'not the one due now (the release’s), two in due order');
    assert.deepEqual(await stage(first.last!, 10), { looked: 1, last: { sendAt: NOW + 20, id: 'msg_0004' } }, 'on from the key; not after `until`, nor canceled');
    assert.deepEqual(await stage(undefined, 10), { looked: 3, last: { sendAt: NOW + 20, id: 'msg_0004' } }, 'from the start again: the jobs already there are left as they are');
    const jobs = await store.db.selectFrom('jobs').select(['id', 'queue', 'account_id', 'ref', 'run_at', 'created_at', 'attempts']).orderBy('ref').execute();
    assert.deepEqual(
      jobs.map((j) => [j.queue, j.account_id, j.ref, Number(j.run_at), Number(j.created_at), Number(j.attempts)]),
      [
        ['dispatch', 'acc_a', 'msg_0002', NOW + 10, NOW + 10, 0],
        ['dispatch', 'acc_a', 'msg_0003', NOW + 10, NOW + 10, 0],
        ['dispatch', 'acc_a', 'msg_0004', NOW + 20, NOW + 20, 0],
      ],
      'waiting for their send_at, created then',
    );
    const released = await store.db.transaction().execute((trx) => releaseDueMessages(trx, NOW + 20, 100));
    assert.deepEqual(released.map((m) => m.id), ['msg_0001', 'msg_0002', 'msg_0003', 'msg_0004']);
    const after = await store.db.selectFrom('jobs').select(['id', 'ref', 'run_at']).orderBy('ref').execute();
    assert.deepEqual(
      after.map((j) => [j.ref, Number(j.run_at)]),
      [
        ['msg_0001', NOW + 20],
        ['msg_0002', NOW + 10],
        ['msg_0003', NOW + 10],
        ['msg_0004', NOW + 20],
      ],
      'one job each: the staged ones kept, the unstaged one written by the release',
    );
    assert.deepEqual(
      after.filter((j) => j.ref !== 'msg_0001').map((j) => j.id),
      jobs.map((j) => j.id),
    );
  });

  test('a limit bounds the release even when many rows are due', async () => {
    const store = await open();
    await addAccount(store, 'acc_a');
    await insertMessages(store.db, Array.from({ length: 50 }, (_, i) => scheduled('acc_a', i, NOW - 100)));
    for (const expected of [20, 20, 10, 0]) {
      const got = await store.db.transaction().execute((trx) => releaseDueMessages(trx, NOW, 20));
      assert.equal(got.length, expected);
    }
  });

  if (dialect === 'postgres') {
    test('concurrent releases take disjoint messages without waiting on each other (SKIP LOCKED)', async () => {
      const store = await open();
      await addAccount(store, 'acc_a');
      await insertMessages(store.db, Array.from({ length: 10 }, (_, i) => scheduled('acc_a', i, NOW - 100)));
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let firstIds: string[] = [];
      const first = store.db.transaction().execute(async (trx) => {
        firstIds = (await releaseDueMessages(trx, NOW, 4)).map((m) => m.id);
        await held;
      });
      // Wait until the first transaction holds its rows.
      const deadline = Date.now() + 20_000;
      while (firstIds.length === 0 && Date.now() < deadline) await new Promise((r) => setImmediate(r));
      const second = await store.db.transaction().execute((trx) => releaseDueMessages(trx, NOW, 100));
      release();
      await first;
      assert.equal(firstIds.length, 4);
      assert.equal(second.length, 6);
      assert.equal(new Set([...firstIds, ...second.map((m) => m.id)]).size, 10);
    });
  }

  test('cancelScheduledMessages cancels only the account’s still-scheduled messages of the target', async () => {
    const store = await open();
    await addAccount(store, 'acc_a');
    await addAccount(store, 'acc_b');
    await insertMessages(store.db, [
      scheduled('acc_a', 1, NOW + 10, { batch_id: 'bat_1' }),
      scheduled('acc_a', 2, NOW + 10, { batch_id: 'bat_1' }),
      scheduled('acc_a', 3, NOW + 10, { batch_id: 'bat_1', status: 'pending' }),
      scheduled('acc_a', 4, NOW + 10),
      scheduled('acc_b', 5, NOW + 10),
    ]);
    assert.deepEqual(await cancelScheduledMessages(store.db, 'acc_b', { messageId: 'msg_0004' }, NOW), [], 'another account’s');
    assert.deepEqual(await cancelScheduledMessages(store.db, 'acc_a', { batchId: 'bat_1' }, NOW), [
      // Written without `credits`, as before prices: charged one credit per segment.
      { id: 'msg_0001', credits: 2 },
      { id: 'msg_0002', credits: 1 },
    ]);
    assert.deepEqual(await cancelScheduledMessages(store.db, 'acc_a', { batchId: 'bat_1' }, NOW), [], 'a second cancel finds nothing');
    assert.deepEqual(await cancelScheduledMessages(store.db, 'acc_a', { messageId: 'msg_0004' }, NOW), [{ id: 'msg_0004', credits: 1 }]);
    assert.deepEqual(await statuses(store), { msg_0001: 'canceled', msg_0002: 'canceled', msg_0003: 'pending', msg_0004: 'canceled', msg_0005: 'scheduled' });
    assert.equal(await accountHasMessage(store.db, 'acc_a', 'msg_0005'), false);
    assert.equal(await accountHasMessage(store.db, 'acc_b', 'msg_0005'), true);
    assert.equal(await accountHasBatch(store.db, 'acc_a', 'bat_1'), false, 'no batches row was written here');
  });

  test('send-time lookups: account statuses, approved Sender ID keys, numbers held', async () => {
    const store = await open();
    await addAccount(store, 'acc_a');
    await addAccount(store, 'acc_b', { status: 'suspended' });
    const sid = (id: string, account: string, name: string, status: 'approved' | 'rejected') => ({
      id,
      account_id: account,
      name,
      name_key: name.toUpperCase(),
      status,
      review_note: null,
      created_at: NOW,
      updated_at: NOW,
    });
    await insertSenderId(store.db, sid('sid_1', 'acc_a', 'Acme', 'approved'));
    await insertSenderId(store.db, sid('sid_2', 'acc_a', 'Old', 'rejected'));
    await insertSenderId(store.db, sid('sid_3', 'acc_b', 'Bee', 'approved'));
    assert.deepEqual([...(await accountStatuses(store.db, ['acc_a', 'acc_b', 'acc_x']))].sort(), [
      ['acc_a', 'active'],
      ['acc_b', 'suspended'],
    ]);
    assert.deepEqual([...(await approvedSenderKeysAmong(store.db, 'acc_a', ['ACME', 'OLD', 'BEE', 'ACME']))], ['ACME'], 'only its own approved ones');
    assert.deepEqual([...(await approvedSenderKeysAmong(store.db, 'acc_b', ['ACME', 'BEE']))], ['BEE']);
    await insertNumber(store.db, { number: '+447700900001', account_id: 'acc_a', label: null, created_at: NOW });
    await insertNumber(store.db, { number: '12345', account_id: 'acc_b', label: null, created_at: NOW });
    assert.deepEqual([...(await numbersHeldAmong(store.db, 'acc_a', ['+447700900001', '12345', '+447700900002']))], ['+447700900001']);
    assert.deepEqual([...(await numbersHeldAmong(store.db, 'acc_b', ['+447700900001', '12345']))], ['12345']);
  });
});
