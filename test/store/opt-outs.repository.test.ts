import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deleteOptOut, insertOptOut, optedOutAmong, optedOutPhones, optOutRow, optOutsPage, takeReplySlot } from '../../src/store/repositories/opt-outs.repository.ts';
import { readAccessRevision } from '../../src/store/repositories/api-keys.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { insertAccount } from './fixtures.ts';

forEachDialect((_dialect, open) => {
  test('optedOutAmong finds the same phones for a batch whether the account has fewer opt-outs than the batch names, or more', async () => {
    const store = await open();
    await insertAccount(store, 'acc_few');
    await insertAccount(store, 'acc_many');
    const phone = (i: number) => `+4479110${String(i).padStart(5, '0')}`;
    for (const i of [3, 70, 500]) await insertOptOut(store.db, { account_id: 'acc_few', phone: phone(i), source: 'api', number: null, created_at: i });
    for (let i = 0; i < 300; i += 2) await insertOptOut(store.db, { account_id: 'acc_many', phone: phone(i), source: 'api', number: null, created_at: i });
    const batch = Array.from({ length: 100 }, (_, i) => phone(i));
    assert.deepEqual([...(await optedOutAmong(store.db, 'acc_few', batch))].sort(), [phone(3), phone(70)]);
    const many = [...(await optedOutAmong(store.db, 'acc_many', batch))].sort();
    assert.deepEqual(many, batch.filter((_, i) => i % 2 === 0), 'the 150 opt-outs outnumber the batch: each phone looked up');
    assert.deepEqual([...(await optedOutAmong(store.db, 'acc_few', [phone(3), phone(4)]))], [phone(3)], 'a short list is looked up directly');
  });

  test('an opt-out is kept once per account and phone, listed newest first, found among phones; changes move the access revision', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertAccount(store, 'acc_b');
    const r0 = await readAccessRevision(store);
    assert.equal(await insertOptOut(store.db, { account_id: 'acc_a', phone: '+447911000001', source: 'keyword', number: '+447700900001', created_at: 10 }), true);
    assert.equal(await insertOptOut(store.db, { account_id: 'acc_a', phone: '+447911000001', source: 'api', number: null, created_at: 20 }), false);
    assert.equal(await insertOptOut(store.db, { account_id: 'acc_a', phone: '+447911000002', source: 'api', number: null, created_at: 30 }), true);
    assert.equal(await insertOptOut(store.db, { account_id: 'acc_b', phone: '+447911000001', source: 'operator', number: null, created_at: 40 }), true);
    assert.ok((await readAccessRevision(store)) > r0);
    assert.equal((await optOutRow(store.db, 'acc_a', '+447911000001'))?.source, 'keyword');
    const page = await optOutsPage(store.db, { accountId: 'acc_a' }, 1, 0);
    assert.deepEqual([page.rows.map((r) => r.phone), page.total], [['+447911000002'], 2]);
    assert.deepEqual((await optOutsPage(store.db, { accountId: 'acc_a', phone: '+447911000001' }, 10, 0)).rows.map((r) => r.phone), ['+447911000001']);
    assert.deepEqual([...(await optedOutAmong(store.db, 'acc_a', ['+447911000001', '+447911000009', '+447911000001']))], ['+447911000001']);
    assert.deepEqual((await optedOutPhones(store.db, 'acc_a', 10)).sort(), ['+447911000001', '+447911000002']);
    assert.equal((await optedOutPhones(store.db, 'acc_a', 1)).length, 1);
    const r1 = await readAccessRevision(store);
    assert.equal(await deleteOptOut(store.db, 'acc_a', '+447911000002'), true);
    assert.equal(await deleteOptOut(store.db, 'acc_a', '+447911000002'), false);
    assert.ok((await readAccessRevision(store)) > r1);
  });

  test('confirmations: at most `max` per number, phone and day', async () => {
    const store = await open();
    const taken: boolean[] = [];
    for (let i = 0; i < 4; i++) taken.push(await takeReplySlot(store.db, '+447700900001', '+447911000001', 100, 3));
    assert.deepEqual(taken, [true, true, true, false]);
    assert.equal(await takeReplySlot(store.db, '+447700900001', '+447911000001', 101, 3), true, 'another day');
    assert.equal(await takeReplySlot(store.db, '+447700900002', '+447911000001', 100, 3), true, 'another number');
  });
});
