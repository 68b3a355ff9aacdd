/** The operator's review queue: pending Sender IDs oldest first, counted, and their accounts' names. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Store } from '../../src/store/connect.ts';
import type { SenderIdsTable, SenderIdStatus } from '../../src/store/database.ts';
import { accountNames, countAllPendingSenderIds, pendingSenderIdsPage } from '../../src/store/repositories/review-queue.repository.ts';
import { insertSenderId } from '../../src/store/repositories/sender-ids.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { addAccount } from './fixtures.ts';

async function senderId(store: Store, id: string, accountId: string, status: SenderIdStatus, createdAt: number): Promise<SenderIdsTable> {
  const row: SenderIdsTable = { id, account_id: accountId, name: `N${id}`, name_key: `N${id}`.toUpperCase(), status, review_note: null, created_at: createdAt, updated_at: createdAt };
  await insertSenderId(store.db, row);
  return row;
}

describe('review-queue repository', () => {
  forEachDialect((_dialect, open) => {
    it('pages pending Sender IDs of every account, oldest first (ties by id), and counts them', async () => {
      const store = await open();
      await addAccount(store, 'acc_a');
      await addAccount(store, 'acc_b');
      const s3 = await senderId(store, 'sid_3', 'acc_a', 'pending', 30);
      const s1 = await senderId(store, 'sid_1', 'acc_b', 'pending', 10);
      const s2b = await senderId(store, 'sid_2b', 'acc_a', 'pending', 20);
      const s2a = await senderId(store, 'sid_2a', 'acc_b', 'pending', 20);
      await senderId(store, 'sid_ok', 'acc_a', 'approved', 1);
      await senderId(store, 'sid_no', 'acc_b', 'rejected', 2);
      const num = (rows: SenderIdsTable[]) => rows.map((r) => ({ ...r, created_at: Number(r.created_at), updated_at: Number(r.updated_at) }));
      assert.deepEqual(num(await pendingSenderIdsPage(store.db, 10, 0)), [s1, s2a, s2b, s3]);
      assert.deepEqual(num(await pendingSenderIdsPage(store.db, 2, 0)), [s1, s2a]);
      assert.deepEqual(num(await pendingSenderIdsPage(store.db, 2, 2)), [s2b, s3]);
      assert.deepEqual(await pendingSenderIdsPage(store.db, 2, 4), []);
      assert.equal(await countAllPendingSenderIds(store.db), 4);
    });

    it('counts none when nothing waits', async () => {
      const store = await open();
      await addAccount(store, 'acc_a');
      await senderId(store, 'sid_ok', 'acc_a', 'approved', 1);
      assert.equal(await countAllPendingSenderIds(store.db), 0);
      assert.deepEqual(await pendingSenderIdsPage(store.db, 10, 0), []);
    });

    it("reads the names and addresses of the accounts asked for, and none for an empty list", async () => {
      const store = await open();
      await addAccount(store, 'acc_a', { name: 'Alpha', email: 'ops@alpha.example' });
      await addAccount(store, 'acc_b', { name: 'Beta', email: 'beta@example.com' });
      await addAccount(store, 'acc_c');
      const names = await accountNames(store.db, ['acc_b', 'acc_a', 'acc_none']);
      assert.deepEqual(
        names.sort((x, y) => x.id.localeCompare(y.id)),
        [
          { id: 'acc_a', name: 'Alpha', email: 'ops@alpha.example' },
          { id: 'acc_b', name: 'Beta', email: 'beta@example.com' },
        ],
      );
      assert.deepEqual(await accountNames(store.db, []), []);
    });
  });
});
