/** Account limits: quotas, the daily cap's guarded debit, the destination list, and the row lock quota checks take. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import type { Store } from '../../src/store/connect.ts';
import {
  accountLimitsRow,
  allowedCountriesNow,
  allowedCountriesRow,
  countPendingSenderIds,
  debitState,
  lockAccountLimits,
  storedDocumentBytes,
  tryDebitWithinDailyLimit,
  updateAccountLimits,
} from '../../src/store/repositories/account-limits.repository.ts';
import { insertDocuments, insertSenderId } from '../../src/store/repositories/sender-ids.repository.ts';
import type { SenderIdStatus } from '../../src/store/database.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { addAccount } from './fixtures.ts';

const DAY = 20_000;

async function senderId(store: Store, id: string, accountId: string, status: SenderIdStatus = 'pending') {
  await insertSenderId(store.db, { id, account_id: accountId, name: id, name_key: id.toUpperCase(), status, review_note: null, created_at: 1, updated_at: 1 });
}

const debit = (store: Store, accountId: string, credits: number, messages: number, day = DAY) =>
  store.db.transaction().execute((trx) => tryDebitWithinDailyLimit(trx, accountId, credits, messages, day));

async function balanceAndCount(store: Store, accountId: string) {
  const row = await store.db.selectFrom('accounts').select(['credits', 'daily_count', 'daily_day']).where('id', '=', accountId).executeTakeFirstOrThrow();
  return { credits: Number(row.credits), daily_count: Number(row.daily_count), daily_day: Number(row.daily_day) };
}

describe('account-limits repository', () => {
  forEachDialect((dialect, open) => {
    it('reads the limits as numbers, updates only what a patch names, and tells whether the account exists', async () => {
      const store = await open();
      await addAccount(store, 'acc_1', { origin: 'signup', daily_count: 4, daily_day: DAY });
      const expected = {
        id: 'acc_1',
        origin: 'signup',
        pending_sender_id_limit: null,
        document_quota_bytes: null,
        daily_message_limit: null,
        daily_count: 4,
        daily_day: DAY,
        allowed_countries: null,
      };
      assert.deepEqual(await accountLimitsRow(store.db, 'acc_1'), expected);
      assert.equal(await accountLimitsRow(store.db, 'acc_none'), undefined);

      assert.equal(await updateAccountLimits(store.db, 'acc_1', { pending_sender_id_limit: 3, document_quota_bytes: 5_000_000_000, allowed_countries: '1,44' }), true);
      assert.equal(await updateAccountLimits(store.db, 'acc_1', { daily_message_limit: 100 }), true);
      // Larger than 32 bits, and still a number on PostgreSQL.
      assert.deepEqual(await accountLimitsRow(store.db, 'acc_1'), {
        ...expected,
        pending_sender_id_limit: 3,
        document_quota_bytes: 5_000_000_000,
        daily_message_limit: 100,
        allowed_countries: '1,44',
      });
      assert.equal(await updateAccountLimits(store.db, 'acc_1', { daily_message_limit: null }), true);
      assert.equal((await accountLimitsRow(store.db, 'acc_1'))!.daily_message_limit, null);
      // An empty patch changes nothing but still tells whether the account exists.
      assert.equal(await updateAccountLimits(store.db, 'acc_1', {}), true);
      assert.equal(await updateAccountLimits(store.db, 'acc_none', {}), false);
      assert.equal(await updateAccountLimits(store.db, 'acc_none', { pending_sender_id_limit: 1 }), false);
    });

    it("counts the account's pending Sender IDs and stored document bytes, and no other account's", async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      await addAccount(store, 'acc_2');
      assert.equal(await countPendingSenderIds(store.db, 'acc_1'), 0);
      assert.equal(await storedDocumentBytes(store.db, 'acc_1'), 0);
      await senderId(store, 'sid_1', 'acc_1');
      await senderId(store, 'sid_2', 'acc_1');
      await senderId(store, 'sid_3', 'acc_1', 'approved');
      await senderId(store, 'sid_4', 'acc_1', 'rejected');
      await senderId(store, 'sid_5', 'acc_2');
      assert.equal(await countPendingSenderIds(store.db, 'acc_1'), 2);
      assert.equal(await countPendingSenderIds(store.db, 'acc_2'), 1);
      const doc = (id: string, sid: string, account: string, size: number) => ({ id, sender_id_id: sid, account_id: account, filename: `${id}.pdf`, content_type: 'application/pdf', size, content: Buffer.alloc(1), created_at: 1 });
      await insertDocuments(store.db, [doc('doc_1', 'sid_1', 'acc_1', 1000), doc('doc_2', 'sid_3', 'acc_1', 234), doc('doc_3', 'sid_5', 'acc_2', 99)]);
      assert.equal(await storedDocumentBytes(store.db, 'acc_1'), 1234);
      assert.equal(await storedDocumentBytes(store.db, 'acc_2'), 99);
    });

    it('debits and counts only within the balance and the daily cap, and starts a new day at zero', async () => {
      const store = await open();
      await addAccount(store, 'acc_1', { credits: 10, daily_message_limit: 5, daily_count: 3, daily_day: DAY });
      // Two more messages fit the cap of 5; a third does not, whatever the balance.
      assert.equal(await debit(store, 'acc_1', 3, 3), null);
      assert.deepEqual(await balanceAndCount(store, 'acc_1'), { credits: 10, daily_count: 3, daily_day: DAY });
      assert.equal(await debit(store, 'acc_1', 2, 2), 8);
      assert.deepEqual(await balanceAndCount(store, 'acc_1'), { credits: 8, daily_count: 5, daily_day: DAY });
      assert.equal(await debit(store, 'acc_1', 1, 1), null);
      assert.deepEqual(await debitState(store.db, 'acc_1', DAY), { credits: 8, dailyLimit: 5, countedToday: 5 });
      // The next day counts from zero: yesterday's five do not count.
      assert.deepEqual(await debitState(store.db, 'acc_1', DAY + 1), { credits: 8, dailyLimit: 5, countedToday: 0 });
      assert.equal(await debit(store, 'acc_1', 9, 1, DAY + 1), null);
      assert.equal(await debit(store, 'acc_1', 4, 4, DAY + 1), 4);
      assert.deepEqual(await balanceAndCount(store, 'acc_1'), { credits: 4, daily_count: 4, daily_day: DAY + 1 });
      assert.equal(await debit(store, 'acc_1', 4, 1, DAY + 1), 0);
      assert.equal(await debit(store, 'acc_none', 0, 0), null);
      assert.equal(await debitState(store.db, 'acc_none', DAY), undefined);
    });

    it('without a cap, only the balance guards, and the day is still counted', async () => {
      const store = await open();
      await addAccount(store, 'acc_1', { credits: 1_000, daily_count: 999, daily_day: DAY });
      assert.equal(await debit(store, 'acc_1', 500, 500), 500);
      assert.deepEqual(await balanceAndCount(store, 'acc_1'), { credits: 500, daily_count: 1_499, daily_day: DAY });
      assert.equal(await debit(store, 'acc_1', 501, 1), null);
      assert.deepEqual(await debitState(store.db, 'acc_1', DAY), { credits: 500, dailyLimit: null, countedToday: 1_499 });
    });

    it('concurrent debits never pass the cap or the balance on the same room', async () => {
      const store = await open();
      await addAccount(store, 'acc_cap', { credits: 1_000, daily_message_limit: 7 });
      await addAccount(store, 'acc_bal', { credits: 7 });
      const capped = await Promise.all(Array.from({ length: 12 }, () => debit(store, 'acc_cap', 1, 1)));
      const funded = await Promise.all(Array.from({ length: 12 }, () => debit(store, 'acc_bal', 1, 1)));
      assert.equal(capped.filter((r) => r !== null).length, 7);
      assert.equal(funded.filter((r) => r !== null).length, 7);
      assert.deepEqual(await balanceAndCount(store, 'acc_cap'), { credits: 993, daily_count: 7, daily_day: DAY });
      assert.deepEqual(await balanceAndCount(store, 'acc_bal'), { credits: 0, daily_count: 7, daily_day: DAY });
    });

    it('reads the destination list on the read connection and inside a transaction', async () => {
      const store = await open();
      await addAccount(store, 'acc_1', { allowed_countries: '1,44' });
      await addAccount(store, 'acc_2');
      assert.deepEqual(await allowedCountriesRow(store, 'acc_1'), { allowed_countries: '1,44' });
      assert.deepEqual(await allowedCountriesRow(store, 'acc_2'), { allowed_countries: null });
      assert.equal(await allowedCountriesRow(store, 'acc_none'), undefined);
      assert.equal(await allowedCountriesNow(store.db, 'acc_1'), '1,44');
      assert.equal(await allowedCountriesNow(store.db, 'acc_2'), null);
      assert.equal(await allowedCountriesNow(store.db, 'acc_none'), undefined);
      await store.db.transaction().execute(async (trx) => {
        await updateAccountLimits(trx, 'acc_1', { allowed_countries: '33' });
        assert.equal(await allowedCountriesNow(trx, 'acc_1'), '33');
      });
      assert.deepEqual(await allowedCountriesRow(store, 'acc_1'), { allowed_countries: '33' });
    });

    it('the limits lock serialises quota checks: concurrent requests never pass a pending-ID limit together', async () => {
      const store = await open();
      await addAccount(store, 'acc_1', { pending_sender_id_limit: 2 });
      await senderId(store, 'sid_0', 'acc_1');
      const ids = ['sid_a', 'sid_b', 'sid_c', 'sid_d'];
      let pastLock = 0;
      /**
       * The holder of the lock decides only once every other request is either past its own lock
       * (which it must not be) or waiting for it. SQLite runs the store's transactions one after
       * another on its one write connection, so there the others cannot have started yet.
       */
      const othersBlockedOrPast = async () => {
        if (dialect !== 'postgres') return;
        const deadline = Date.now() + 10_000;
        while (Date.now() < deadline) {
          const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`.execute(store.db);
          if (pastLock - 1 + Number(rows[0]!.n) >= ids.length - 1 - done) return;
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      };
      let done = 0;
      const request = (id: string) =>
        store.db
          .transaction()
          .execute(async (trx) => {
            const limits = await lockAccountLimits(trx, 'acc_1');
            pastLock++;
            assert.equal(limits?.pending_sender_id_limit, 2);
            await othersBlockedOrPast();
            if ((await countPendingSenderIds(trx, 'acc_1')) >= limits!.pending_sender_id_limit!) return false;
            await insertSenderId(trx, { id, account_id: 'acc_1', name: id, name_key: id.toUpperCase(), status: 'pending', review_note: null, created_at: 2, updated_at: 2 });
            return true;
          })
          .finally(() => {
            pastLock--;
            done++;
          });
      const results = await Promise.all(['sid_a', 'sid_b', 'sid_c', 'sid_d'].map(request));
      assert.equal(results.filter(Boolean).length, 1);
      assert.equal(await countPendingSenderIds(store.db, 'acc_1'), 2);
      // Locking reads the limits as accountLimitsRow does, and leaves the row as it was.
      const before = await accountLimitsRow(store.db, 'acc_1');
      assert.deepEqual(await store.db.transaction().execute((trx) => lockAccountLimits(trx, 'acc_1')), before);
      assert.deepEqual(await accountLimitsRow(store.db, 'acc_1'), before);
      assert.equal(await store.db.transaction().execute((trx) => lockAccountLimits(trx, 'acc_none')), undefined);
    });
  });
});
