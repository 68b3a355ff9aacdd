/** The credit ledger: guarded debits, credits with their ledger row, sums and pages. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Store } from '../../src/store/connect.ts';
import { creditBalance, creditCredits, insertLedgerRows, ledgerSum, listLedger, tryDebit } from '../../src/store/repositories/ledger.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { addAccount } from './fixtures.ts';

const debit = (store: Store, accountId: string, amount: number) => store.db.transaction().execute((trx) => tryDebit(trx, accountId, amount));

describe('ledger repository', () => {
  forEachDialect((_dialect, open) => {
    it('credits with a ledger row, and the balance equals the ledger sum', async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      const balance = await store.db.transaction().execute((trx) => creditCredits(trx, 'acc_1', 70, 'topup', null, 'first', 10));
      assert.equal(balance, 70);
      assert.equal(await store.db.transaction().execute((trx) => creditCredits(trx, 'acc_1', 5, 'refund', 'msg_1', null, 20)), 75);
      assert.equal(await creditBalance(store.db, 'acc_1'), 75);
      assert.equal(await ledgerSum(store.db, 'acc_1'), 75);
      const rows = await listLedger(store.db, 'acc_1', 10, 0);
      assert.deepEqual(
        rows.map((r) => [Number(r.amount), r.kind, r.reference, r.note, Number(r.created_at), r.account_id]),
        [
          [5, 'refund', 'msg_1', null, 20, 'acc_1'],
          [70, 'topup', null, 'first', 10, 'acc_1'],
        ],
      );
      assert.ok(rows.every((r) => r.id.startsWith('led_')));
      assert.notEqual(rows[0]!.id, rows[1]!.id);
      assert.deepEqual((await listLedger(store.db, 'acc_1', 1, 1)).map((r) => Number(r.amount)), [70]);
    });

    it('credits nothing to an unknown account, and writes no ledger row for it', async () => {
      const store = await open();
      assert.equal(await store.db.transaction().execute((trx) => creditCredits(trx, 'acc_none', 5, 'topup', null, null, 1)), null);
      assert.equal(await ledgerSum(store.db, 'acc_none'), 0);
      assert.equal(await creditBalance(store.db, 'acc_none'), 0);
      assert.deepEqual(await listLedger(store.db, 'acc_none', 10, 0), []);
    });

    it('a credit rolled back with its transaction leaves neither balance nor ledger row', async () => {
      const store = await open();
      await addAccount(store, 'acc_1', { credits: 3 });
      await assert.rejects(
        store.db.transaction().execute(async (trx) => {
          assert.equal(await creditCredits(trx, 'acc_1', 10, 'adjustment', null, 'oops', 5), 13);
          // Inside the transaction the balance is the new one.
          assert.equal(await creditBalance(trx, 'acc_1'), 13);
          throw new Error('abandon');
        }),
        /abandon/,
      );
      assert.equal(await creditBalance(store.db, 'acc_1'), 3);
      assert.equal(await ledgerSum(store.db, 'acc_1'), 0);
    });

    it('debits only what the balance covers, down to exactly zero', async () => {
      const store = await open();
      await addAccount(store, 'acc_1', { credits: 10 });
      assert.equal(await debit(store, 'acc_1', 11), null);
      assert.equal(await creditBalance(store.db, 'acc_1'), 10);
      assert.equal(await debit(store, 'acc_1', 4), 6);
      assert.equal(await debit(store, 'acc_1', 6), 0);
      assert.equal(await debit(store, 'acc_1', 1), null);
      assert.equal(await debit(store, 'acc_none', 1), null);
      assert.equal(await creditBalance(store.db, 'acc_1'), 0);
    });

    it('concurrent debits never spend the same credits twice', async () => {
      const store = await open();
      await addAccount(store, 'acc_1', { credits: 20 });
      const results = await Promise.all(Array.from({ length: 10 }, () => debit(store, 'acc_1', 3)));
      const passed = results.filter((r) => r !== null);
      // 20 credits cover six debits of 3; each one that passed saw a different balance.
      assert.equal(passed.length, 6);
      assert.deepEqual(passed.sort((a, b) => a - b), [2, 5, 8, 11, 14, 17]);
      assert.equal(await creditBalance(store.db, 'acc_1'), 2);
    });

    it('concurrent credits are all counted, each with its ledger row', async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      await Promise.all(Array.from({ length: 8 }, (_, i) => store.db.transaction().execute((trx) => creditCredits(trx, 'acc_1', i + 1, 'topup', null, null, 100 + i))));
      assert.equal(await creditBalance(store.db, 'acc_1'), 36);
      assert.equal(await ledgerSum(store.db, 'acc_1'), 36);
      assert.equal((await listLedger(store.db, 'acc_1', 100, 0)).length, 8);
    });

    it('writes ledger rows in bulk; sums and pages are per account, newest first with ties by id', async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      await addAccount(store, 'acc_2');
      await insertLedgerRows(store.db, [
        { id: 'led_1', account_id: 'acc_1', amount: -2, kind: 'debit', reference: 'msg_1', note: null, created_at: 1 },
        { id: 'led_3', account_id: 'acc_1', amount: -3, kind: 'debit', reference: 'msg_2', note: null, created_at: 2 },
        { id: 'led_2', account_id: 'acc_1', amount: 9, kind: 'topup', reference: null, note: 'n', created_at: 2 },
        { id: 'led_4', account_id: 'acc_2', amount: 100, kind: 'topup', reference: null, note: null, created_at: 3 },
      ]);
      assert.equal(await ledgerSum(store.db, 'acc_1'), 4);
      assert.equal(await ledgerSum(store.db, 'acc_2'), 100);
      assert.deepEqual((await listLedger(store.db, 'acc_1', 10, 0)).map((r) => r.id), ['led_3', 'led_2', 'led_1']);
      assert.deepEqual((await listLedger(store.db, 'acc_1', 2, 1)).map((r) => r.id), ['led_2', 'led_1']);
      assert.deepEqual(await listLedger(store.db, 'acc_1', 10, 3), []);
      await insertLedgerRows(store.db, []);
      assert.equal(await ledgerSum(store.db, 'acc_1'), 4);
    });
  });
});
