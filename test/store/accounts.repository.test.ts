/** Accounts and their ledger: rows, filters, and the credit guard that two debits cannot pass together. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as accounts from '../../src/store/repositories/accounts.repository.ts';
import { creditBalance, creditCredits, insertLedgerRows, ledgerSum, listLedger, tryDebit } from '../../src/store/repositories/ledger.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { addAccount } from './fixtures.ts';

describe('accounts repository', () => {
  forEachDialect((_dialect, open) => {
    it('stores an account and reads it back whole', async () => {
      const store = await open();
      const row = await addAccount(store, 'acc_1', { webhook_secret_rotated_at: null, daily_message_limit: 50 });
      assert.deepEqual(await accounts.findAccount(store.db, 'acc_1'), { ...row });
      assert.equal(await accounts.findAccount(store.db, 'acc_none'), undefined);
      assert.equal(await accounts.findAccountEmail(store.db, 'acc_1'), 'acc_1@example.com');
      assert.equal(await accounts.findAccountEmail(store.db, 'acc_none'), undefined);
    });

    it('lists newest first and filters by address, by part of name or address, and by id', async () => {
      const store = await open();
      await addAccount(store, 'acc_a', { name: 'Alpha 100%', email: 'Ops@Alpha.example', created_at: 1 });
      await addAccount(store, 'acc_b', { name: 'Beta', email: 'beta@example.com', created_at: 2 });
      await addAccount(store, 'acc_c', { name: 'Gamma_x', email: 'gamma@example.com', created_at: 2 });
      const ids = (rows: { id: string }[]) => rows.map((r) => r.id);
      assert.deepEqual(ids(await accounts.listAccounts(store.db)), ['acc_c', 'acc_b', 'acc_a']);
      assert.deepEqual(ids(await accounts.listAccounts(store.db, { email: 'ops@alpha.EXAMPLE' })), ['acc_a']);
      assert.deepEqual(ids(await accounts.listAccounts(store.db, { search: 'BETA' })), ['acc_b']);
      assert.deepEqual(ids(await accounts.listAccounts(store.db, { search: 'acc_b' })), ['acc_b']);
      // LIKE's wildcards in the search text match only themselves.
      assert.deepEqual(ids(await accounts.listAccounts(store.db, { search: '100%' })), ['acc_a']);
      assert.deepEqual(ids(await accounts.listAccounts(store.db, { search: 'a_x' })), ['acc_c']);
      assert.deepEqual(ids(await accounts.listAccounts(store.db, { search: '_' })), ['acc_c']);
    });

    it('sets the status, and says when there is no such account', async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      assert.equal(await accounts.setAccountStatus(store.db, 'acc_1', 'suspended'), true);
      assert.equal((await accounts.findAccount(store.db, 'acc_1'))?.status, 'suspended');
      assert.equal(await accounts.setAccountStatus(store.db, 'acc_none', 'active'), false);
    });

    it('replaces the webhook secret and keeps the previous one', async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      await accounts.replaceWebhookSecret(store.db, 'acc_1', 'whsec_new', 'whsec_acc_1', 5_000);
      const row = await accounts.findAccount(store.db, 'acc_1');
      assert.equal(row?.webhook_secret, 'whsec_new');
      assert.equal(row?.webhook_secret_previous, 'whsec_acc_1');
      assert.equal(row?.webhook_secret_rotated_at, 5_000);
    });

    it('deletes an account', async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      await accounts.deleteAccount(store.db, 'acc_1');
      assert.equal(await accounts.findAccount(store.db, 'acc_1'), undefined);
    });

    it('counts no pending messages for an account without any', async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      assert.equal(await accounts.countPendingMessages(store.read, 'acc_1'), 0);
    });
  });
});

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
        rows.map((r) => [r.amount, r.kind, r.reference, r.note, r.created_at]),
        [
          [5, 'refund', 'msg_1', null, 20],
          [70, 'topup', null, 'first', 10],
        ],
      );
      assert.deepEqual((await listLedger(store.db, 'acc_1', 1, 1)).map((r) => r.amount), [70]);
    });

    it('credits nothing to an unknown account', async () => {
      const store = await open();
      assert.equal(await store.db.transaction().execute((trx) => creditCredits(trx, 'acc_none', 5, 'topup', null, null, 1)), null);
      assert.equal(await ledgerSum(store.db, 'acc_none'), 0);
      assert.equal(await creditBalance(store.db, 'acc_none'), 0);
    });

    it('debits only what the balance covers, even when two debits race', async () => {
      const store = await open();
      await addAccount(store, 'acc_1', { credits: 10 });
      assert.equal(await store.db.transaction().execute((trx) => tryDebit(trx, 'acc_1', 11)), null);
      const results = await Promise.all([6, 6].map((amount) => store.db.transaction().execute((trx) => tryDebit(trx, 'acc_1', amount))));
      assert.deepEqual(results.filter((r) => r !== null), [4]);
      assert.equal(await creditBalance(store.db, 'acc_1'), 4);
    });

    it('writes ledger rows in bulk', async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      await insertLedgerRows(store.db, [
        { id: 'led_1', account_id: 'acc_1', amount: -2, kind: 'debit', reference: 'msg_1', note: null, created_at: 1 },
        { id: 'led_2', account_id: 'acc_1', amount: -3, kind: 'debit', reference: 'msg_2', note: null, created_at: 2 },
      ]);
      assert.equal(await ledgerSum(store.db, 'acc_1'), -5);
    });
  });
});
