/** Owners and their single-use links: a link works once, only while live, and only the newest. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { OwnerTokensTable } from '../../src/store/database.ts';
import * as owners from '../../src/store/repositories/owners.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { addAccount, addOwner } from './fixtures.ts';

function token(id: string, over: Partial<OwnerTokensTable> = {}): OwnerTokensTable {
  return { id, token_digest: `digest_${id}`, purpose: 'reset', owner_id: 'own_1', created_at: 100, expires_at: 1_000, used_at: null, ...over };
}

describe('owners repository', () => {
  forEachDialect((_dialect, open) => {
    it('stores owners and finds them by id, by address and by account', async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      const one = await addOwner(store, 'own_1', 'acc_1');
      await addOwner(store, 'own_2', 'acc_1');
      assert.deepEqual(await owners.findOwnerById(store.db, 'own_1'), one);
      assert.deepEqual(await owners.findOwnerByEmail(store.db, 'own_1@example.com'), one);
      assert.equal(await owners.findOwnerByEmail(store.db, 'nobody@example.com'), undefined);
      assert.deepEqual((await owners.ownerEmailsOfAccount(store.db, 'acc_1')).sort(), ['own_1@example.com', 'own_2@example.com']);
      assert.deepEqual(await owners.ownerEmailsOfAccount(store.db, 'acc_none'), []);
    });

    it('refuses a second owner with the same address', async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      await addOwner(store, 'own_1', 'acc_1', { email: 'same@example.com' });
      await assert.rejects(addOwner(store, 'own_2', 'acc_1', { email: 'same@example.com' }));
    });

    it('changes the password and marks the address verified once', async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      await addOwner(store, 'own_1', 'acc_1');
      await owners.setOwnerPasswordHash(store.db, 'own_1', 'scrypt$new');
      await owners.markOwnerVerified(store.db, 'own_1', 500);
      await owners.markOwnerVerified(store.db, 'own_1', 900);
      const row = await owners.findOwnerById(store.db, 'own_1');
      assert.equal(row?.password_hash, 'scrypt$new');
      assert.equal(row?.email_verified_at, 500);
    });

    it('uses a live link once, for its purpose only', async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      await addOwner(store, 'own_1', 'acc_1');
      await owners.insertOwnerToken(store.db, token('otk_1'));
      assert.equal((await owners.findLiveOwnerToken(store.db, 'digest_otk_1', 'reset', 500))?.id, 'otk_1');
      assert.equal(await owners.findLiveOwnerToken(store.db, 'digest_otk_1', 'verify', 500), undefined);
      assert.equal(await owners.consumeOwnerToken(store.db, 'digest_otk_1', 'verify', 500), undefined);
      const results = await Promise.all([owners.consumeOwnerToken(store.db, 'digest_otk_1', 'reset', 500), owners.consumeOwnerToken(store.db, 'digest_otk_1', 'reset', 501)]);
      assert.equal(results.filter((r) => r !== undefined).length, 1);
      assert.equal(await owners.findLiveOwnerToken(store.db, 'digest_otk_1', 'reset', 600), undefined);
    });

    it('does not use an expired link, and sweeps it', async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      await addOwner(store, 'own_1', 'acc_1');
      await owners.insertOwnerToken(store.db, token('otk_1', { expires_at: 1_000 }));
      await owners.insertOwnerToken(store.db, token('otk_2', { expires_at: 2_000 }));
      assert.equal(await owners.findLiveOwnerToken(store.db, 'digest_otk_1', 'reset', 1_000), undefined);
      assert.equal(await owners.consumeOwnerToken(store.db, 'digest_otk_1', 'reset', 1_000), undefined);
      await owners.deleteExpiredOwnerTokens(store.db, 1_000);
      const left = await store.db.selectFrom('owner_tokens').select('id').execute();
      assert.deepEqual(left.map((r) => r.id), ['otk_2']);
    });

    it('voids the live links of one purpose', async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      await addOwner(store, 'own_1', 'acc_1');
      await owners.insertOwnerToken(store.db, token('otk_1'));
      await owners.insertOwnerToken(store.db, token('otk_2', { purpose: 'verify' }));
      await owners.voidOwnerTokens(store.db, 'own_1', 'reset', 300);
      assert.equal(await owners.findLiveOwnerToken(store.db, 'digest_otk_1', 'reset', 400), undefined);
      assert.equal((await owners.findLiveOwnerToken(store.db, 'digest_otk_2', 'verify', 400))?.id, 'otk_2');
    });
  });
});
