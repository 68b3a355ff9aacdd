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

    it('the expiry sweep takes pending ones past their expiry, oldest expiry first, and nothing else', async () => {
      const store = await openTestStore(dialect);
      try {
        await repo.insertVerification(store.db, verification('ver_late', { recipient: '+447700900001', expires_at: NOW - 1_000 }));
        await repo.insertVerification(store.db, verification('ver_later', { recipient: '+447700900002', expires_at: NOW - 5_000 }));
        await repo.insertVerification(store.db, verification('ver_now', { recipient: '+447700900003', expires_at: NOW }));
        await repo.insertVerification(store.db, verification('ver_live', { recipient: '+447700900004', expires_at: NOW + 1 }));
        await repo.insertVerification(store.db, verification('ver_done', { recipient: '+447700900005', status: 'approved', expires_at: NOW - 9_000 }));
        assert.deepEqual((await repo.expiredPending(store.db, NOW, 500)).map((v) => v.id), ['ver_later', 'ver_late', 'ver_now']);
        assert.deepEqual((await repo.expiredPending(store.db, NOW, 1)).map((v) => v.id), ['ver_later']);
        assert.equal(await repo.closeVerification(store.db, 'ver_later', 'expired', NOW), true);
        assert.deepEqual((await repo.expiredPending(store.db, NOW, 500)).map((v) => v.id), ['ver_late', 'ver_now']);
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
        // A group's lookups with the guard off, in its transaction: whether each number has a pending one, in order, not for a final one or none at all.
        const question = (serviceId: string, recipient: string) => ({ serviceId, accountId: 'acc_1', recipient, range: recipient.slice(0, -3), velocitySince: 0, conversionSince: 0 });
        assert.deepEqual(await store.db.transaction().execute((trx) => repo.pendingOf(trx, [question('vsv_2', '+447700900123'), question('vsv_1', '+447700900999'), question('vsv_1', '+447700900123')], store)), [{ pending: 1 }, { pending: null }, { pending: 1 }]);
        await repo.closeVerification(store.db, 'ver_4', 'canceled', NOW);
        assert.deepEqual(await store.db.transaction().execute((trx) => repo.pendingOf(trx, [question('vsv_2', '+447700900123')], store)), [{ pending: null }]);
        assert.deepEqual(await repo.pendingOf(store.db, [], store), []);
      } finally {
        await store.close();
      }
    });
  });
}

for (const dialect of availableDialects.filter((d) => d === 'postgres')) {
  describe(`${dialect}: the checks of a group by id in one statement`, () => {
    it('takes as many checks as each verification has left, in order, under takeCheckIn’s conditions', async () => {
      const store = await openTestStore(dialect);
      try {
        const service = { account_id: 'acc_1', name: 'Acme', sender: 'Acme', code_length: 6, lifetime_seconds: 600, max_checks: 5, max_sends: 5, allowed_countries: null, fraud_guard: 'block' as const, template: null, created_at: NOW, deleted_at: null };
        await repo.insertService(store.db, { ...service, id: 'vsv_1' });
        await repo.insertService(store.db, { ...service, id: 'vsv_gone', deleted_at: NOW });
        await repo.insertVerification(store.db, verification('ver_3left', { checks_left: 3 }));
        await repo.insertVerification(store.db, verification('ver_1left', { recipient: '+447700900124', checks_left: 1 }));
        await repo.insertVerification(store.db, verification('ver_lapsed', { recipient: '+447700900125', expires_at: NOW }));
        await repo.insertVerification(store.db, verification('ver_gone', { recipient: '+447700900126', service_id: 'vsv_gone' }));
        const { value: revision } = await store.db.selectFrom('access_revision').select('value').executeTakeFirstOrThrow();
        const check = (id: string, patch: Partial<repo.CheckById> = {}): repo.CheckById => ({ accountId: 'acc_1', serviceId: id === 'ver_gone' ? 'vsv_gone' : 'vsv_1', id, now: NOW + 1, granted: Number(revision), ...patch });
        const taken = await repo.takeChecksById(store.db, [
          check('ver_3left'),
          check('ver_1left'),
          check('ver_3left'),
          check('ver_3left', { accountId: 'acc_2' }), // another account's: never its row
          check('ver_1left'),
          check('ver_lapsed'),
          check('ver_3left'),
          check('ver_gone'),
          check('ver_3left'),
        ]);
        assert.deepEqual(
          taken.map((row) => (row ? [row.id, Number(row.checks_left)] : null)),
          [['ver_3left', 3], ['ver_1left', 1], ['ver_3left', 2], null, null, null, ['ver_3left', 1], null, null],
        );
        const left = await store.db.selectFrom('verifications').select(['id', 'checks_left']).orderBy('id').execute();
        assert.deepEqual(Object.fromEntries(left.map((r) => [r.id, Number(r.checks_left)])), { ver_1left: 0, ver_3left: 0, ver_gone: 5, ver_lapsed: 5 });
        // The access revision moved past the one granted: nothing is taken.
        await repo.insertVerification(store.db, verification('ver_new', { recipient: '+447700900127' }));
        await store.db.updateTable('access_revision').set({ value: Number(revision) + 1 }).execute();
        assert.deepEqual(await repo.takeChecksById(store.db, [check('ver_new')]), [undefined]);
        assert.equal((await repo.takeChecksById(store.db, [check('ver_new', { granted: null })]))[0]?.id, 'ver_new');
      } finally {
        await store.close();
      }
    });
  });
}

for (const dialect of availableDialects) {
  describe(`${dialect}: the fraud guard's figures of a group`, () => {
    it('counts per number, per range and the range’s day since its block, the safe list and the pending one, for each question in order', async () => {
      const store = await openTestStore(dialect);
      try {
        const hour = NOW - 3_600_000;
        const day = NOW - 86_400_000;
        await repo.insertVerification(store.db, verification('ver_1', { status: 'approved', created_at: NOW - 60_000 }));
        await repo.insertVerification(store.db, verification('ver_2', { created_at: NOW - 30_000 }));
        await repo.insertVerification(store.db, verification('ver_3', { recipient: '+447700900124', status: 'expired', created_at: NOW - 7_200_000 }));
        await repo.insertVerification(store.db, verification('ver_4', { recipient: '+447700900125', status: 'blocked', created_at: NOW - 10_000 }));
        await repo.insertVerification(store.db, verification('ver_5', { recipient: '+447700900126', service_id: 'vsv_2', created_at: NOW - 20_000 }));
        await repo.upsertBlock(store.db, { account_id: 'acc_1', range_prefix: '+447700901', level: 1, blocked_at: NOW - 100_000, blocked_until: NOW + 100_000, sent: 10, approved: 0 });
        await repo.addSafeListEntry(store.db, 'acc_1', '+4477009009', NOW);
        // Older than the day: counted by nothing.
        await repo.insertVerification(store.db, verification('ver_old', { recipient: '+447700900127', status: 'expired', created_at: NOW - 90_000_000 }));
        // A range whose block ended 40 s ago: its velocity counts across the block, its conversion only after it.
        await repo.upsertBlock(store.db, { account_id: 'acc_1', range_prefix: '+447700902', level: 0, blocked_at: NOW - 100_000, blocked_until: NOW - 40_000, sent: 10, approved: 0 });
        await repo.insertVerification(store.db, verification('ver_6', { recipient: '+447700902001', range_prefix: '+447700902', status: 'expired', created_at: NOW - 50_000 }));
        await repo.insertVerification(store.db, verification('ver_7', { recipient: '+447700902002', range_prefix: '+447700902', status: 'approved', created_at: NOW - 30_000 }));
        await repo.insertVerification(store.db, verification('ver_8', { recipient: '+447700902003', range_prefix: '+447700902', service_id: 'vsv_2', created_at: NOW - 35_000 }));
        const ask = (recipient: string, serviceId = 'vsv_1'): repo.GuardQuestion => ({ serviceId, accountId: 'acc_1', recipient, range: recipient.slice(0, -3), velocitySince: hour, conversionSince: day });
        const figures = await store.db.transaction().execute((trx) => repo.guardFiguresOf(trx, [ask('+447700900123'), ask('+447700901555'), ask('+447700900999', 'vsv_2'), ask('+447700902009')], store));
        const plain = figures.map((f) => Object.fromEntries(Object.entries(f).map(([k, v]) => [k, v === null || typeof v === 'string' && !/^\d+$/.test(v) ? v : Number(v)])));
        assert.deepEqual(plain, [
          // Two of the hour to the number and its range in the service (the blocked one never counts); the account's range over the day: four, one approved.
          { safe: 0, per_number: 2, per_number_oldest: NOW - 60_000, per_range: 2, per_range_oldest: NOW - 60_000, block_level: null, blocked_until: null, sent: 4, approved: 1, pending: 1 },
          { safe: 0, per_number: 0, per_number_oldest: null, per_range: 0, per_range_oldest: null, block_level: 1, blocked_until: NOW + 100_000, sent: 0, approved: 0, pending: null },
          { safe: 1, per_number: 0, per_number_oldest: null, per_range: 1, per_range_oldest: NOW - 20_000, block_level: null, blocked_until: null, sent: 4, approved: 1, pending: null },
          { safe: 0, per_number: 0, per_number_oldest: null, per_range: 2, per_range_oldest: NOW - 50_000, block_level: 0, blocked_until: NOW - 40_000, sent: 2, approved: 1, pending: null },
        ]);
        assert.deepEqual(await repo.guardFiguresOf(store.db, [], store), []);
      } finally {
        await store.close();
      }
    });
  });
}
