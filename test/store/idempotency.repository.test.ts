import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  deleteExpiredIdempotencyKey,
  deleteExpiredIdempotencyKeys,
  finishIdempotencyKey,
  finishIdempotencyKeys,
  idempotencyKeyRow,
  insertIdempotencyKey,
  releaseIdempotencyKey,
  takeOverIdempotencyKey,
  type IdempotencyKeyRow,
} from '../../src/store/repositories/idempotency.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { insertAccount } from './fixtures.ts';

function taken(key: string, now: number, ttl = 1000): IdempotencyKeyRow {
  return { account_id: 'acc_a', key, request_hash: 'h', state: 'in_progress', response_status: null, response_body: null, locked_until: now + 60, expires_at: now + ttl, created_at: now };
}

forEachDialect((_dialect, open) => {
  test('a key is taken once per account; finishing keeps the result', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertIdempotencyKey(store.db, taken('k1', 100));
    await assert.rejects(insertIdempotencyKey(store.db, taken('k1', 100)));
    await finishIdempotencyKey(store.db, 'acc_a', 'k1', 422, '{"a":1}');
    const row = await idempotencyKeyRow(store.db, 'acc_a', 'k1');
    assert.equal(row?.state, 'done');
    assert.equal(Number(row?.response_status), 422);
    assert.equal(row?.response_body, '{"a":1}');
    assert.equal(await idempotencyKeyRow(store.db, 'acc_b', 'k1'), undefined);
    // A finished key is not released.
    await releaseIdempotencyKey(store.db, 'acc_a', 'k1');
    assert.ok(await idempotencyKeyRow(store.db, 'acc_a', 'k1'));
  });

  test('the results of many keys are recorded at once, each under its own key and account only', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertAccount(store, 'acc_b');
    for (const key of ['k1', 'k2', 'k3']) await insertIdempotencyKey(store.db, taken(key, 100));
    await insertIdempotencyKey(store.db, { ...taken('k1', 100), account_id: 'acc_b' });
    await finishIdempotencyKeys(store.db, [
      { accountId: 'acc_a', key: 'k1', status: 200, body: '{"n":1}' },
      { accountId: 'acc_a', key: 'k3', status: 200, body: "{\"n\":\"it's 3\"}" },
    ]);
    await finishIdempotencyKeys(store.db, []);
    const row = (key: string, account = 'acc_a') => idempotencyKeyRow(store.db, account, key);
    assert.deepEqual([(await row('k1'))?.state, (await row('k1'))?.response_body], ['done', '{"n":1}']);
    assert.deepEqual([(await row('k3'))?.state, (await row('k3'))?.response_body], ['done', `{"n":"it's 3"}`]);
    assert.equal((await row('k2'))?.state, 'in_progress');
    assert.equal((await row('k1', 'acc_b'))?.state, 'in_progress', "another account's key of the same name is untouched");
  });

  test('an in-progress key is taken over only from the lock it had, and released', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertIdempotencyKey(store.db, taken('k1', 100));
    assert.equal(await takeOverIdempotencyKey(store.db, 'acc_a', 'k1', 999, 500), false);
    assert.equal(await takeOverIdempotencyKey(store.db, 'acc_a', 'k1', 160, 500), true);
    assert.equal(await takeOverIdempotencyKey(store.db, 'acc_a', 'k1', 160, 600), false);
    assert.equal(Number((await idempotencyKeyRow(store.db, 'acc_a', 'k1'))?.locked_until), 500);
    await releaseIdempotencyKey(store.db, 'acc_a', 'k1');
    assert.equal(await idempotencyKeyRow(store.db, 'acc_a', 'k1'), undefined);
  });

  test('expired keys are deleted one by one (if unchanged) or in bounded batches', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertIdempotencyKey(store.db, taken('k1', 100, 10));
    await deleteExpiredIdempotencyKey(store.db, 'acc_a', 'k1', 111);
    assert.ok(await idempotencyKeyRow(store.db, 'acc_a', 'k1'));
    await deleteExpiredIdempotencyKey(store.db, 'acc_a', 'k1', 110);
    assert.equal(await idempotencyKeyRow(store.db, 'acc_a', 'k1'), undefined);
    for (const k of ['a', 'b', 'c']) await insertIdempotencyKey(store.db, taken(k, 100, 10));
    await insertIdempotencyKey(store.db, taken('live', 100, 1000));
    assert.equal(await deleteExpiredIdempotencyKeys(store.db, 200, 2), 2);
    assert.equal(await deleteExpiredIdempotencyKeys(store.db, 200, 2), 1);
    assert.equal(await deleteExpiredIdempotencyKeys(store.db, 200, 2), 0);
    assert.ok(await idempotencyKeyRow(store.db, 'acc_a', 'live'));
  });
});
