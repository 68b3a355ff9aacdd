/**
 * Verify's one pending verification per service and number (migration 032): pending duplicates
 * made before it keep their newest, and the index refuses a second pending one while letting
 * any number of final ones (and a new pending one once the first is final) in.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { VerificationsTable } from '../../src/store/database.ts';
import { isUniqueViolation } from '../../src/store/dialect.ts';
import { migrateToLatest } from '../../src/store/migrate.ts';
import * as repo from '../../src/store/repositories/verify.repository.ts';
import { availableDialects } from '../helpers/dialects.ts';
import { openTestStore } from '../helpers/test-store.ts';

const NOW = 1_750_000_000_000;

function verification(id: string, patch: Partial<VerificationsTable> = {}): VerificationsTable {
  return {
    id,
    account_id: 'acc_1',
    service_id: 'vsv_1',
    recipient: '+447700900123',
    range_prefix: '+447700900',
    country: 'GB',
    code_hash: 'h',
    status: 'pending',
    sends: 1,
    checks_left: 5,
    message_id: `msg_${id}`,
    credits_used: 1,
    last_sent_at: NOW,
    expires_at: NOW + 600_000,
    created_at: NOW,
    updated_at: NOW,
    ...patch,
  };
}

for (const dialect of availableDialects) {
  describe(`${dialect}: one pending verification per service and number`, () => {
    it('migration 032 keeps the newest of pending duplicates and expires the others', async () => {
      const store = await openTestStore(dialect, { upTo: '031-marketing' });
      try {
        await repo.insertVerification(store.db, verification('ver_a'));
        await repo.insertVerification(store.db, verification('ver_b'));
        await repo.insertVerification(store.db, verification('ver_c', { recipient: '+447700900124' }));
        await repo.insertVerifyText(store.db, 'msg_ver_a', 'ver_a', 'Your code is 123456');
        await repo.insertVerifyText(store.db, 'msg_ver_b', 'ver_b', 'Your code is 654321');
        await migrateToLatest(store.db);
        const rows = await store.db.selectFrom('verifications').select(['id', 'status']).orderBy('id').execute();
        assert.deepEqual(rows, [
          { id: 'ver_a', status: 'expired' },
          { id: 'ver_b', status: 'pending' },
          { id: 'ver_c', status: 'pending' },
        ]);
        assert.deepEqual((await repo.verifyTexts(store.db, ['msg_ver_a', 'msg_ver_b'])).get('msg_ver_a'), undefined);
        assert.equal((await repo.verifyTexts(store.db, ['msg_ver_b'])).get('msg_ver_b'), 'Your code is 654321');
      } finally {
        await store.close();
      }
    });

    it('a second pending one is refused; final ones are not; a lapsed one is found only without `now`', async () => {
      const store = await openTestStore(dialect);
      try {
        await repo.insertVerification(store.db, verification('ver_1'));
        await assert.rejects(repo.insertVerification(store.db, verification('ver_2')), (e) => isUniqueViolation(e));
        await repo.insertVerification(store.db, verification('ver_3', { status: 'blocked' }));
        await repo.insertVerification(store.db, verification('ver_4', { service_id: 'vsv_2' }));
        assert.equal((await repo.pendingVerification(store.db, 'vsv_1', '+447700900123', NOW + 600_000)), undefined, 'past its expiry');
        assert.equal((await repo.pendingVerification(store.db, 'vsv_1', '+447700900123'))?.id, 'ver_1');
        assert.equal(await repo.closeVerification(store.db, 'ver_1', 'expired', NOW + 600_000), true);
        await repo.insertVerification(store.db, verification('ver_5'));
        assert.equal((await repo.pendingVerification(store.db, 'vsv_1', '+447700900123', NOW))?.id, 'ver_5');
      } finally {
        await store.close();
      }
    });
  });
}
