import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  documentById,
  documentsOfSenderIds,
  insertDocuments,
  insertSenderId,
  listSenderIdRows,
  senderAccessByKey,
  senderAccessInTransaction,
  senderIdById,
  setSenderIdReview,
  type SenderIdRow,
} from '../../src/store/repositories/sender-ids.repository.ts';
import { readAccessRevision } from '../../src/store/repositories/api-keys.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { insertAccount } from './fixtures.ts';

function senderId(id: string, accountId: string, name: string, createdAt: number): SenderIdRow {
  return { id, account_id: accountId, name, name_key: name.toUpperCase(), status: 'pending', review_note: null, created_at: createdAt, updated_at: createdAt };
}

forEachDialect((_dialect, open) => {
  test('Sender IDs are listed newest first, filtered by account and status', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertAccount(store, 'acc_b');
    await insertSenderId(store.db, senderId('sid_1', 'acc_a', 'Acme', 10));
    await insertSenderId(store.db, senderId('sid_2', 'acc_a', 'Other', 20));
    await insertSenderId(store.db, senderId('sid_3', 'acc_b', 'Acme', 30));
    assert.equal(await setSenderIdReview(store.db, 'sid_2', 'approved', null, 40), true);
    assert.equal(await setSenderIdReview(store.db, 'sid_none', 'approved', null, 40), false);
    assert.deepEqual((await listSenderIdRows(store.db)).map((s) => s.id), ['sid_3', 'sid_2', 'sid_1']);
    assert.deepEqual((await listSenderIdRows(store.db, { accountId: 'acc_a' })).map((s) => s.id), ['sid_2', 'sid_1']);
    assert.deepEqual((await listSenderIdRows(store.db, { status: 'pending' })).map((s) => s.id), ['sid_3', 'sid_1']);
    assert.deepEqual((await listSenderIdRows(store.db, { accountId: 'acc_a', status: 'approved' })).map((s) => s.id), ['sid_2']);
    const reviewed = await senderIdById(store.db, 'sid_2', 'acc_a');
    assert.equal(reviewed?.status, 'approved');
    assert.equal(Number(reviewed?.updated_at), 40);
    assert.equal(await senderIdById(store.db, 'sid_2', 'acc_b'), undefined);
  });

  test('a name key is unique per account', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertSenderId(store.db, senderId('sid_1', 'acc_a', 'Acme', 10));
    await assert.rejects(insertSenderId(store.db, senderId('sid_2', 'acc_a', 'ACME', 20)));
  });

  test('a send reads the Sender ID by name key, prepared or in a transaction; a review moves the access revision', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertSenderId(store.db, senderId('sid_1', 'acc_a', 'Acme', 10));
    assert.deepEqual({ ...(await senderAccessByKey(store, 'acc_a', 'ACME')) }, { name: 'Acme', status: 'pending' });
    assert.equal(await senderAccessByKey(store, 'acc_b', 'ACME'), undefined);
    const before = await readAccessRevision(store);
    await setSenderIdReview(store.db, 'sid_1', 'approved', null, 20);
    assert.ok((await readAccessRevision(store)) > before);
    const inTrx = await store.db.transaction().execute((trx) => senderAccessInTransaction(trx, 'acc_a', 'ACME'));
    assert.deepEqual({ ...inTrx }, { name: 'Acme', status: 'approved' });
  });

  test('documents keep their bytes, list without them by Sender ID, and are restricted by account', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertSenderId(store.db, senderId('sid_1', 'acc_a', 'Acme', 10));
    const bytes = Buffer.from([0x25, 0x50, 0x44, 0x46, 0x2d, 0x00, 0xff]);
    await insertDocuments(store.db, [
      { id: 'doc_2', sender_id_id: 'sid_1', account_id: 'acc_a', filename: 'b.pdf', content_type: 'application/pdf', size: bytes.length, content: bytes, created_at: 20 },
      { id: 'doc_1', sender_id_id: 'sid_1', account_id: 'acc_a', filename: 'a.pdf', content_type: 'application/pdf', size: bytes.length, content: bytes, created_at: 10 },
    ]);
    const listed = await documentsOfSenderIds(store.db, ['sid_1', 'sid_none']);
    assert.deepEqual(listed.map((d) => d.id), ['doc_1', 'doc_2']);
    assert.equal('content' in listed[0]!, false);
    assert.deepEqual(await documentsOfSenderIds(store.db, []), []);
    const doc = await documentById(store.db, 'doc_1', 'acc_a');
    assert.ok(Buffer.isBuffer(doc?.content));
    assert.deepEqual(doc?.content, bytes);
    assert.equal(await documentById(store.db, 'doc_1', 'acc_b'), undefined);
    assert.equal((await documentById(store.db, 'doc_2'))?.filename, 'b.pdf');
  });
});
