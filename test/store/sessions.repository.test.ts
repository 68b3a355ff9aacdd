/** Dashboard sessions and the API-key form's one-time nonce. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SessionsTable } from '../../src/store/database.ts';
import * as sessions from '../../src/store/repositories/sessions.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';

function session(id: string, over: Partial<SessionsTable> = {}): SessionsTable {
  return { id, token_digest: `digest_${id}`, kind: 'owner', subject_id: 'own_1', csrf_token: `csrf_${id}`, created_at: 100, expires_at: 1_000, ...over };
}

describe('sessions repository', () => {
  forEachDialect((_dialect, open) => {
    it('finds a session by its digest within its kind only', async () => {
      const store = await open();
      await sessions.insertSession(store.db, session('ses_1'));
      const found = await sessions.findSessionByDigest(store.db, 'owner', 'digest_ses_1');
      assert.equal(found?.id, 'ses_1');
      assert.equal(found?.csrf_token, 'csrf_ses_1');
      assert.equal(found?.expires_at, 1_000);
      assert.equal(await sessions.findSessionByDigest(store.db, 'operator', 'digest_ses_1'), undefined);
    });

    it('extends the expiry and sweeps expired sessions', async () => {
      const store = await open();
      await sessions.insertSession(store.db, session('ses_1', { expires_at: 1_000 }));
      await sessions.insertSession(store.db, session('ses_2', { expires_at: 1_000 }));
      await sessions.setSessionExpiry(store.db, 'ses_2', 5_000);
      await sessions.deleteExpiredSessions(store.db, 1_000);
      assert.equal(await sessions.findSessionByDigest(store.db, 'owner', 'digest_ses_1'), undefined);
      assert.equal((await sessions.findSessionByDigest(store.db, 'owner', 'digest_ses_2'))?.expires_at, 5_000);
    });

    it("ends one session, or every session of a person but one", async () => {
      const store = await open();
      await sessions.insertSession(store.db, session('ses_1'));
      await sessions.insertSession(store.db, session('ses_2'));
      await sessions.insertSession(store.db, session('ses_3'));
      await sessions.insertSession(store.db, session('ses_4', { kind: 'operator', subject_id: 'own_1' }));
      await sessions.insertSession(store.db, session('ses_5', { subject_id: 'own_2' }));
      await sessions.deleteSession(store.db, 'ses_3');
      await sessions.deleteSessionsOf(store.db, 'owner', 'own_1', 'ses_2');
      const left = async () => (await store.db.selectFrom('sessions').select('id').orderBy('id').execute()).map((r) => r.id);
      assert.deepEqual(await left(), ['ses_2', 'ses_4', 'ses_5']);
      await sessions.deleteSessionsOf(store.db, 'owner', 'own_1');
      assert.deepEqual(await left(), ['ses_4', 'ses_5']);
    });

    it('uses the key form nonce once: fresh, then used; an older one is unknown', async () => {
      const store = await open();
      await sessions.insertSession(store.db, session('ses_1'));
      assert.equal(await sessions.consumeKeyFormNonce(store.db, 'ses_1', 'n1'), 'unknown');
      await sessions.setKeyFormNonce(store.db, 'ses_1', 'n1');
      await sessions.setKeyFormNonce(store.db, 'ses_1', 'n2');
      assert.equal(await sessions.consumeKeyFormNonce(store.db, 'ses_1', 'n1'), 'unknown');
      const both = await Promise.all([sessions.consumeKeyFormNonce(store.db, 'ses_1', 'n2'), sessions.consumeKeyFormNonce(store.db, 'ses_1', 'n2')]);
      assert.deepEqual(both.sort(), ['fresh', 'used']);
      assert.equal(await sessions.consumeKeyFormNonce(store.db, 'ses_1', 'n2'), 'used');
    });
  });
});
