/** Accounts: rows and filters (their ledger is in ledger.repository.test.ts). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as accounts from '../../src/store/repositories/accounts.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { addAccount } from './fixtures.ts';

describe('accounts repository', () => {
  forEachDialect((_dialect, open) => {
    it('stores an account and reads it back whole', async () => {
      const store = await open();
      const row = await addAccount(store, 'acc_1', { webhook_secret_rotated_at: null, daily_message_limit: 50 });
      // Columns of later migrations that the fixture leaves to their defaults.
      const later = {
        rate_card: null,
        twilio_sid: null,
        twilio_token: null,
        twilio_token_previous: null,
        twilio_token_rotated_at: null,
        retention_body_days: null,
        retention_message_days: null,
        retention_mask_days: null,
        require_2fa: 0,
        quiet_hours_start: null,
        quiet_hours_end: null,
      };
      assert.deepEqual(await accounts.findAccount(store.db, 'acc_1'), { ...row, ...later });
      assert.equal(await accounts.findAccount(store.db, 'acc_none'), undefined);
      assert.equal(await accounts.findAccountEmail(store.db, 'acc_1'), 'acc_1@example.com');
      assert.equal(await accounts.findAccountEmail(store.db, 'acc_none'), undefined);
    });

    it('keeps the quiet-hours window (null: the default) and changes nothing else', async () => {
      const store = await open();
      await addAccount(store, 'acc_q');
      assert.deepEqual(await accounts.findAccountQuietHours(store.db, 'acc_q'), { quiet_hours_start: null, quiet_hours_end: null });
      assert.equal(await accounts.setAccountQuietHours(store.db, 'acc_q', 540, 1230), true);
      assert.deepEqual(await accounts.findAccountQuietHours(store.db, 'acc_q'), { quiet_hours_start: 540, quiet_hours_end: 1230 });
      assert.equal(await accounts.setAccountQuietHours(store.db, 'acc_none', 540, 1230), false);
      assert.equal(await accounts.findAccountQuietHours(store.db, 'acc_none'), undefined);
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
