import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isUniqueViolation } from '../../src/store/dialect.ts';
import {
  deleteSmppUser,
  insertSmppBind,
  insertSmppUser,
  listSmppUserRows,
  liveSmppBinds,
  smppUserForBind,
  smppUserRow,
  smppUserStates,
  touchSmppBinds,
  updateSmppUserPassword,
  type SmppUserRow,
} from '../../src/store/repositories/smpp-users.repository.ts';
import {
  deleteExpiredSmppDeliveries,
  deleteSmppDeliveries,
  enqueueSmppDeliveries,
  insertSmppMessages,
  postponeSmppDelivery,
  smppMessagesAmong,
  takeSmppDeliveries,
  waitingSmppDeliveries,
  type SmppOutboxRow,
} from '../../src/store/repositories/smpp-outbox.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { addAccount } from './fixtures.ts';

function user(systemId: string, accountId: string, over: Partial<SmppUserRow> = {}): SmppUserRow {
  return { system_id: systemId, account_id: accountId, password_hash: 'scrypt$x', tps: 100, max_binds: 4, allow: '', created_at: 10, rotated_at: 10, ...over };
}

function delivery(id: string, systemId: string, over: Partial<SmppOutboxRow> = {}): SmppOutboxRow {
  return { id, system_id: systemId, kind: 'receipt', message_id: 'msg_1', pdu: '{}', attempts: 0, next_at: 0, created_at: 100, expires_at: 10_000, ...over };
}

forEachDialect((_dialect, open) => {
  test('SMPP users: unique system_id, listed by account, found with the account status, rotated, deleted with what waits for them', async () => {
    const store = await open();
    await addAccount(store, 'acc_a');
    await addAccount(store, 'acc_b', { status: 'suspended' });
    await insertSmppUser(store.db, user('alpha', 'acc_a', { allow: '127.0.0.0/8' }));
    await insertSmppUser(store.db, user('beta', 'acc_b', { created_at: 20, rotated_at: 20 }));
    await assert.rejects(insertSmppUser(store.db, user('alpha', 'acc_b')), (e) => isUniqueViolation(e));
    assert.deepEqual((await listSmppUserRows(store.db)).map((u) => u.system_id), ['alpha', 'beta']);
    assert.deepEqual((await listSmppUserRows(store.db, { accountId: 'acc_b' })).map((u) => u.system_id), ['beta']);
    assert.deepEqual(await smppUserRow(store.db, 'alpha'), user('alpha', 'acc_a', { allow: '127.0.0.0/8' }));
    assert.equal((await smppUserForBind(store.db, 'beta'))?.account_status, 'suspended');
    assert.equal(await smppUserForBind(store.db, 'nobody'), undefined);

    const rotated = await updateSmppUserPassword(store.db, 'alpha', 'scrypt$y', 50);
    assert.equal(rotated?.password_hash, 'scrypt$y');
    assert.equal(rotated?.rotated_at, 50);
    assert.equal(await updateSmppUserPassword(store.db, 'nobody', 'scrypt$y', 50), undefined);
    assert.deepEqual(
      [...(await smppUserStates(store.db, ['alpha', 'beta', 'gone'])).entries()].sort(),
      [
        ['alpha', { password_hash: 'scrypt$y', account_status: 'active' }],
        ['beta', { password_hash: 'scrypt$x', account_status: 'suspended' }],
      ],
    );

    await enqueueSmppDeliveries(store.db, [delivery('d1', 'alpha'), delivery('d2', 'beta')]);
    assert.equal((await deleteSmppUser(store.db, 'alpha'))?.system_id, 'alpha');
    assert.equal(await deleteSmppUser(store.db, 'alpha'), undefined);
    assert.deepEqual([...(await waitingSmppDeliveries(store.db, ['alpha', 'beta'], 0)).entries()], [['beta', 1]]);
  });

  test('live binds are listed while refreshed, and forgotten once stale', async () => {
    const store = await open();
    await insertSmppBind(store.db, { id: 'b1', system_id: 'alpha', bind_type: 'transceiver', address: '127.0.0.1', since: 100, submits: 0, seen_at: 100 });
    await insertSmppBind(store.db, { id: 'b2', system_id: 'beta', bind_type: 'receiver', address: '127.0.0.2', since: 200, submits: 0, seen_at: 200 });
    await touchSmppBinds(store.db, [{ id: 'b1', submits: 7 }], 1_000);
    assert.deepEqual((await liveSmppBinds(store.db, 0)).map((b) => [b.id, b.submits, b.seen_at]), [['b1', 7, 1_000], ['b2', 0, 200]]);
    assert.deepEqual((await liveSmppBinds(store.db, 0, ['beta'])).map((b) => b.id), ['b2']);
    assert.deepEqual(await liveSmppBinds(store.db, 0, []), []);
    assert.deepEqual((await liveSmppBinds(store.db, 500)).map((b) => b.id), ['b1']);
    assert.deepEqual((await liveSmppBinds(store.db, 0)).map((b) => b.id), ['b1'], 'the stale row is gone');
  });

  test('deliveries are taken oldest first, once, held until answered or due again, and expire', async () => {
    const store = await open();
    await insertSmppMessages(store.db, [{ message_id: 'msg_1', system_id: 'alpha', part_ids: 'msg_1,msg_1.2', registered_delivery: 1, source_addr: 'ACME', source_ton: 5, destination_addr: '447700900001', created_at: 1 }]);
    assert.deepEqual((await smppMessagesAmong(store.db, ['msg_1', 'msg_2'])).map((m) => [m.message_id, m.part_ids, m.registered_delivery]), [['msg_1', 'msg_1,msg_1.2', 1]]);

    await enqueueSmppDeliveries(store.db, [
      delivery('d2', 'alpha', { created_at: 200 }),
      delivery('d1', 'alpha', { created_at: 100 }),
      delivery('d3', 'alpha', { created_at: 300, expires_at: 400 }),
      delivery('x1', 'beta'),
    ]);
    const first = await takeSmppDeliveries(store.db, 'alpha', 350, 30_350, 2);
    assert.deepEqual(first.map((d) => [d.id, d.attempts, d.next_at]), [['d1', 1, 30_350], ['d2', 1, 30_350]]);
    assert.deepEqual((await takeSmppDeliveries(store.db, 'alpha', 350, 30_350, 10)).map((d) => d.id), ['d3'], 'held ones are not taken again');
    assert.deepEqual(await takeSmppDeliveries(store.db, 'alpha', 500, 30_500, 10), [], 'd3 expired');

    await postponeSmppDelivery(store.db, 'd1', 600);
    await deleteSmppDeliveries(store.db, ['d2']);
    assert.deepEqual((await takeSmppDeliveries(store.db, 'alpha', 600, 31_000, 10)).map((d) => [d.id, d.attempts]), [['d1', 2]]);
    assert.equal(await deleteExpiredSmppDeliveries(store.db, 500), 1);
    assert.deepEqual([...(await waitingSmppDeliveries(store.db, ['alpha', 'beta'], 500)).entries()].sort(), [['alpha', 1], ['beta', 1]]);
  });

  test('takes at the same moment (binds of one user in several processes) get disjoint deliveries; answered ones go in one statement', async () => {
    const store = await open();
    const ids = Array.from({ length: 40 }, (_, i) => `d${String(i).padStart(2, '0')}`);
    await enqueueSmppDeliveries(store.db, ids.map((id, i) => delivery(id, 'alpha', { created_at: 100 + i })));
    const takes = await Promise.all(Array.from({ length: 8 }, () => takeSmppDeliveries(store.db, 'alpha', 1000, 31_000, 5)));
    const taken = takes.flat().map((d) => d.id);
    assert.equal(new Set(taken).size, taken.length, 'no delivery taken twice');
    assert.deepEqual([...taken].sort(), ids);
    for (const take of takes) assert.deepEqual(take.map((d) => d.id), [...take.map((d) => d.id)].sort(), 'each take oldest first');
    await deleteSmppDeliveries(store.db, ids.slice(0, 30));
    assert.deepEqual([...(await waitingSmppDeliveries(store.db, ['alpha'], 1000)).entries()], [['alpha', 10]]);
  });
});
