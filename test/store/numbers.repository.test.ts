import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import {
  deleteNumber,
  insertNumber,
  listNumberRows,
  numberRow,
  ownedNumber,
  ownedNumberInTransaction,
} from '../../src/store/repositories/numbers.repository.ts';
import { insertApiKey, readAccessRevision } from '../../src/store/repositories/api-keys.repository.ts';
import { isUniqueViolation } from '../../src/store/dialect.ts';
import { migrateToLatest } from '../../src/store/migrate.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { openTestStore } from '../helpers/test-store.ts';
import { insertAccount } from './fixtures.ts';

forEachDialect((dialect, open) => {
  test('numbers are listed newest first, by account; a number belongs to one account', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertAccount(store, 'acc_b');
    await insertNumber(store.db, { number: '+447700900001', account_id: 'acc_a', label: 'Support', created_at: 10 });
    await insertNumber(store.db, { number: '12345', account_id: 'acc_a', label: null, created_at: 20 });
    await insertNumber(store.db, { number: '+447700900002', account_id: 'acc_b', label: null, created_at: 30 });
    await assert.rejects(insertNumber(store.db, { number: '12345', account_id: 'acc_b', label: null, created_at: 40 }), (e) => isUniqueViolation(e));
    assert.deepEqual((await listNumberRows(store.db)).map((n) => n.number), ['+447700900002', '12345', '+447700900001']);
    assert.deepEqual((await listNumberRows(store.db, { accountId: 'acc_a' })).map((n) => n.number), ['12345', '+447700900001']);
    const row = await numberRow(store.db, '+447700900001');
    assert.deepEqual({ ...row, created_at: Number(row?.created_at) }, { number: '+447700900001', account_id: 'acc_a', label: 'Support', created_at: 10, sms_url: null });
    assert.equal(await numberRow(store.db, '+449999'), undefined);
  });

  test('a send finds its own number only, prepared or in a transaction; assigning and releasing move the access revision', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertAccount(store, 'acc_b');
    const r0 = await readAccessRevision(store);
    await insertNumber(store.db, { number: '+447700900001', account_id: 'acc_a', label: null, created_at: 10 });
    const r1 = await readAccessRevision(store);
    assert.ok(r1 > r0);
    assert.deepEqual({ ...(await ownedNumber(store, 'acc_a', '+447700900001')) }, { number: '+447700900001' });
    assert.equal(await ownedNumber(store, 'acc_b', '+447700900001'), undefined);
    const inTrx = await store.db.transaction().execute((trx) => ownedNumberInTransaction(trx, 'acc_a', '+447700900001'));
    assert.equal(inTrx?.number, '+447700900001');
    const removed = await deleteNumber(store.db, '+447700900001');
    assert.equal(removed?.account_id, 'acc_a');
    assert.ok((await readAccessRevision(store)) > r1);
    assert.equal(await deleteNumber(store.db, '+447700900001'), undefined);
    assert.equal(await ownedNumber(store, 'acc_a', '+447700900001'), undefined);
  });

  test('migration 013 keeps webhook events and gives the new scopes to keys holding all five original ones, and only to them', async () => {
    const store = await openTestStore(dialect, { upTo: '012-key-form-nonce' });
    try {
      // The accounts table as it was before 013 (the fixture writes the later columns).
      await sql`insert into accounts (id, name, email, status, credits, webhook_secret, created_at) values ('acc_a', 'A', 'a@example.com', 'active', 0, 'whsec_a', 1)`.execute(store.db);
      const key = (id: string, scopes: string) => ({ id, account_id: 'acc_a', label: id, prefix: 'pk_live_ab12', digest: `d-${id}`, scopes, created_at: 1, last_used_at: null, revoked_at: null });
      await insertApiKey(store.db, key('key_full', 'reports:read,sms:send,account:read,sender_ids:write,sender_ids:read'));
      await insertApiKey(store.db, key('key_part', 'sms:send,account:read'));
      await sql`insert into webhook_events (id, account_id, message_id, batch_id, event, url, payload, status, attempts, last_error, created_at, updated_at)
        values ('evt_old', 'acc_a', 'msg_1', null, 'sms.sent', 'https://127.0.0.1/h', '{"a":1}', 'delivered', 1, null, 5, 6)`.execute(store.db);
      await migrateToLatest(store.db);
      const kept = await sql<Record<string, unknown>>`select * from webhook_events`.execute(store.db);
      assert.deepEqual(
        kept.rows.map((r) => ({ ...r, created_at: Number(r.created_at), updated_at: Number(r.updated_at) })),
        [{ id: 'evt_old', account_id: 'acc_a', message_id: 'msg_1', batch_id: null, event: 'sms.sent', url: 'https://127.0.0.1/h', payload: '{"a":1}', status: 'delivered', attempts: 1, last_error: null, created_at: 5, updated_at: 6, inbound_id: null }],
        'webhook events survive the change of the table',
      );
      const { rows } = await sql<{ id: string; scopes: string }>`select id, scopes from api_keys order by id`.execute(store.db);
      assert.deepEqual(rows.map((r) => [r.id, r.scopes.split(',').sort()]), [
        ['key_full', ['account:read', 'account:write', 'inbound:read', 'numbers:read', 'opt_outs:read', 'opt_outs:write', 'reports:read', 'sender_ids:read', 'sender_ids:write', 'sms:send']],
        ['key_part', ['account:read', 'sms:send']],
      ]);
    } finally {
      await store.close();
    }
  });
});
