import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  accessRevisionInTransaction,
  accountExists,
  apiKeyById,
  apiKeysOfAccount,
  insertApiKey,
  keyAccessByDigest,
  keyAccessById,
  markApiKeyRevoked,
  readAccessRevision,
  recordKeyUse,
  type ApiKeyRow,
} from '../../src/store/repositories/api-keys.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { insertAccount } from './fixtures.ts';

function key(id: string, accountId: string, createdAt: number): ApiKeyRow {
  return { id, account_id: accountId, label: id, prefix: 'pk_live_ab12', digest: `digest-${id}`, scopes: 'sms:send,account:read', created_at: createdAt, last_used_at: null, revoked_at: null };
}

forEachDialect((_dialect, open) => {
  test('keys are stored, listed newest first and found by digest with their account status', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertAccount(store, 'acc_b', 'suspended');
    assert.equal(await accountExists(store.db, 'acc_a'), true);
    assert.equal(await accountExists(store.db, 'acc_none'), false);
    await insertApiKey(store.db, key('key_1', 'acc_a', 10));
    await insertApiKey(store.db, key('key_2', 'acc_a', 20));
    await insertApiKey(store.db, key('key_3', 'acc_b', 30));
    assert.deepEqual((await apiKeysOfAccount(store.db, 'acc_a')).map((k) => k.id), ['key_2', 'key_1']);
    const found = await keyAccessByDigest(store, 'digest-key_3');
    assert.deepEqual({ ...found, revoked_at: found?.revoked_at ?? null }, {
      key_id: 'key_3',
      account_id: 'acc_b',
      scopes: 'sms:send,account:read',
      revoked_at: null,
      last_used_at: null,
      status: 'suspended',
    });
    assert.equal(await keyAccessByDigest(store, 'digest-none'), undefined);
  });

  test('revoking sets the time once, optionally only within an account; use is recorded', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertApiKey(store.db, key('key_1', 'acc_a', 10));
    await markApiKeyRevoked(store.db, 'key_1', 500, 'acc_other');
    assert.equal((await apiKeyById(store.db, 'key_1'))?.revoked_at, null);
    assert.equal(await apiKeyById(store.db, 'key_1', 'acc_other'), undefined);
    await markApiKeyRevoked(store.db, 'key_1', 600, 'acc_a');
    await markApiKeyRevoked(store.db, 'key_1', 700);
    assert.equal(Number((await apiKeyById(store.db, 'key_1', 'acc_a'))?.revoked_at), 600);
    await recordKeyUse(store.db, 'key_1', 800);
    assert.equal(Number((await apiKeyById(store.db, 'key_1'))?.last_used_at), 800);
    const access = await store.db.transaction().execute((trx) => keyAccessById(trx, 'key_1'));
    assert.deepEqual({ ...access, revoked_at: Number(access?.revoked_at) }, { revoked_at: 600, scopes: 'sms:send,account:read', status: 'active' });
  });

  test('the access revision moves when a key is revoked, read outside and inside a transaction', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertApiKey(store.db, key('key_1', 'acc_a', 10));
    const before = await readAccessRevision(store);
    await markApiKeyRevoked(store.db, 'key_1', 20);
    const after = await readAccessRevision(store);
    assert.ok(after > before, `${after} > ${before}`);
    assert.equal(await store.db.transaction().execute((trx) => accessRevisionInTransaction(trx)), after);
  });
});
