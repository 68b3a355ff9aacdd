import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ACCOUNTS_PER_CLAIM, claimJobs, deleteJobs, dispatchBacklog, dispatchBacklogByAccount, enqueueJobs, hasDueJob, lockDueJobs, queueDepth, releaseJobs, rescheduleJob, retryJobsAt } from '../../src/store/repositories/jobs.repository.ts';
import { claimAndApplyReceipts } from '../../src/services/messages/record-delivery-reports.ts';
import { sql } from 'kysely';
import { migrateToLatest } from '../../src/store/migrate.ts';
import { openTestStore, serviceContext } from '../helpers/test-store.ts';
import type { Store } from '../../src/store/connect.ts';
import { forEachDialect } from '../helpers/dialects.ts';

const NOW = 1_800_000_000_000;
const LEASE = 30_000;

async function jobs(store: Store) {
  return store.db.selectFrom('jobs').selectAll().orderBy('ref').execute();
}

forEachDialect((dialect, open) => {
  test('enqueued jobs are claimed when due, oldest first, up to the limit, by moving their run_at by the lease', async () => {
    const store = await open();
    await enqueueJobs(
      store.db,
      [
        { queue: 'dispatch', accountId: 'acc_1', ref: 'msg_b', runAt: NOW - 10 },
        { queue: 'dispatch', accountId: 'acc_1', ref: 'msg_a', runAt: NOW - 20 },
        { queue: 'dispatch', accountId: 'acc_1', ref: 'msg_c', runAt: NOW - 5, payload: { part: 2 } },
        { queue: 'dispatch', accountId: 'acc_1', ref: 'msg_later', runAt: NOW + 10 * LEASE },
        { queue: 'receipt', ref: 'rcpt_1', runAt: NOW - 100 },
      ],
      NOW - 100,
    );
    const claimed = await claimJobs(store.db, 'dispatch', 2, NOW, LEASE);
    assert.deepEqual(claimed.map((j) => j.ref).sort(), ['msg_a', 'msg_b']);
    for (const job of claimed) {
      assert.equal(job.run_at, NOW + LEASE);
      assert.equal(job.attempts, 1);
    }
    // Claimed work is leased: a second claim gets only what is left and due.
    const next = await claimJobs(store.db, 'dispatch', 10, NOW, LEASE);
    assert.deepEqual(
      next.map((j) => [j.ref, j.payload]),
      [['msg_c', JSON.stringify({ part: 2 })]],
    );
    assert.deepEqual(await claimJobs(store.db, 'dispatch', 10, NOW, LEASE), []);
    // When the lease runs out, the job is due again and counts another attempt.
    const again = await claimJobs(store.db, 'dispatch', 10, NOW + LEASE, LEASE);
    assert.deepEqual(again.map((j) => [j.ref, j.attempts]).sort(), [
      ['msg_a', 2],
      ['msg_b', 2],
      ['msg_c', 2],
    ]);
    assert.deepEqual(await queueDepth(store.db, 'dispatch', NOW), { depth: 4, oldestCreatedAt: NOW - 100 });
    assert.deepEqual(await queueDepth(store.db, 'webhook', NOW), { depth: 0, oldestCreatedAt: null });
  });

  test('dispatch serves accounts in turn: a flood of one account does not hold back the others', async () => {
    const store = await open();
    // acc_big's 50 jobs are all older than the two others' few.
    await enqueueJobs(
      store.db,
      Array.from({ length: 50 }, (_, i) => ({ queue: 'dispatch' as const, accountId: 'acc_big', ref: `big_${String(i).padStart(2, '0')}`, runAt: NOW - 1000 + i })),
      NOW - 1000,
    );
    await enqueueJobs(
      store.db,
      [
        { queue: 'dispatch', accountId: 'acc_small', ref: 'small_0', runAt: NOW - 10 },
        { queue: 'dispatch', accountId: 'acc_small', ref: 'small_1', runAt: NOW - 9 },
        { queue: 'dispatch', accountId: 'acc_other', ref: 'other_0', runAt: NOW - 5 },
        { queue: 'dispatch', accountId: 'acc_other', ref: 'other_later', runAt: NOW + LEASE },
      ],
      NOW - 10,
    );
    const first = await claimJobs(store.db, 'dispatch', 4, NOW, LEASE);
    // One of each account first (each account's own jobs oldest first), then the second round.
    assert.deepEqual(first.map((j) => j.ref).sort(), ['big_00', 'big_01', 'other_0', 'small_0']);
    const second = await claimJobs(store.db, 'dispatch', 4, NOW, LEASE);
    assert.deepEqual(second.map((j) => j.ref).sort(), ['big_02', 'big_03', 'big_04', 'small_1']);
    // The rest is the big account's, oldest first; the job not yet due stays.
    const rest = await claimJobs(store.db, 'dispatch', 100, NOW, LEASE);
    assert.equal(rest.length, 45);
    assert.ok(rest.every((j) => j.ref.startsWith('big_')));
    assert.deepEqual(await claimJobs(store.db, 'dispatch', 100, NOW, LEASE), []);
  });

  test('a dispatch claim walks every account, however many have work waiting', async () => {
    const store = await open();
    const n = ACCOUNTS_PER_CLAIM * 2 + 3;
    await enqueueJobs(
      store.db,
      Array.from({ length: n }, (_, i) => ({ queue: 'dispatch' as const, accountId: `acc_${String(i).padStart(3, '0')}`, ref: `m_${i}`, runAt: NOW })),
      NOW,
    );
    // Claims of 5 jobs: each claim continues after the last account the one before served.
    const seen = new Set<string>();
    const claims = Math.ceil(n / 5);
    for (let i = 0; i < claims; i++) {
      for (const job of await claimJobs(store.db, 'dispatch', 5, NOW, LEASE)) seen.add(job.ref);
    }
    assert.equal(seen.size, n, `every account served once in ${claims} claims`);
  });

  test('concurrent dispatch claims never take the same job twice', async () => {
    const store = await open();
    await enqueueJobs(
      store.db,
      Array.from({ length: 30 }, (_, i) => ({ queue: 'dispatch' as const, accountId: `acc_${i % 3}`, ref: `m_${String(i).padStart(2, '0')}`, runAt: NOW })),
      NOW,
    );
    const claims = await Promise.all(Array.from({ length: 6 }, () => claimJobs(store.db, 'dispatch', 4, NOW, LEASE)));
    const refs = claims.flat().map((j) => j.ref);
    assert.equal(new Set(refs).size, refs.length, 'no job in two claims');
    const rest = await claimJobs(store.db, 'dispatch', 100, NOW, LEASE);
    assert.equal(refs.length + rest.length, 30, 'every job claimed exactly once in the end');
  });

  test('a dispatch claim that continues after the last account served goes on from the first when it reaches the end', async () => {
    const store = await open();
    const job = (accountId: string, ref: string) => ({ queue: 'dispatch' as const, accountId, ref, runAt: NOW });
    await enqueueJobs(store.db, [job('acc_0', 'a1'), job('acc_0', 'a2'), job('acc_1', 'b1'), job('acc_2', 'c1')], NOW);
    // Cut short in its first round: acc_2 has not been served, so the next claim starts there.
    assert.deepEqual((await claimJobs(store.db, 'dispatch', 2, NOW, LEASE)).map((j) => j.ref).sort(), ['a1', 'b1']);
    // It serves acc_2, then acc_0's second job rather than leaving it for a later claim.
    assert.deepEqual((await claimJobs(store.db, 'dispatch', 10, NOW, LEASE)).map((j) => j.ref).sort(), ['a2', 'c1']);
  });

  test('migration 017 keeps the jobs waiting claimable, and drops the dispatch jobs that no claim could reach', async () => {
    const store = await openTestStore(dialect, { upTo: '016-campaigns' });
    try {
      const job = (id: string, queue: string, accountId: string | null, ref: string) =>
        sql`insert into jobs (id, queue, account_id, ref, payload, run_at, attempts, created_at) values (${id}, ${queue}, ${accountId}, ${ref}, null, ${NOW}, 0, ${NOW})`.execute(store.db);
      await job('job_1', 'dispatch', 'acc_1', 'msg_1');
      await job('job_2', 'dispatch', null, 'msg_gone');
      await job('job_3', 'receipt', null, 'rcpt_1');
      await job('job_4', 'webhook', 'acc_1', 'evt_1');
      await migrateToLatest(store.db);
      assert.deepEqual((await claimJobs(store.db, 'dispatch', 10, NOW, LEASE)).map((j) => j.ref), ['msg_1']);
      assert.deepEqual((await claimJobs(store.db, 'receipt', 10, NOW, LEASE)).map((j) => j.ref), ['rcpt_1']);
      assert.deepEqual((await claimJobs(store.db, 'webhook', 10, NOW, LEASE)).map((j) => [j.ref, j.account_id]), [['evt_1', null]]);
      assert.deepEqual((await jobs(store)).map((j) => j.ref), ['evt_1', 'msg_1', 'rcpt_1'], 'the dispatch job without an account is gone');
    } finally {
      await store.close();
    }
  });

  test('a queue has a due job when one of its own is due now, not when its jobs are for later or another queue\'s are due', async () => {
    const store = await open();
    assert.equal(await hasDueJob(store.db, 'receipt', NOW), false);
    await enqueueJobs(
      store.db,
      [
        { queue: 'receipt', ref: 'later', runAt: NOW + 1 },
        { queue: 'webhook', ref: 'evt_1', runAt: NOW - 5 },
        { queue: 'dispatch', accountId: 'acc_1', ref: 'msg_1', runAt: NOW - 5 },
      ],
      NOW - 10,
    );
    assert.equal(await hasDueJob(store.db, 'receipt', NOW), false);
    assert.equal(await hasDueJob(store.db, 'receipt', NOW + 1), true, 'due at its run_at');
    await enqueueJobs(store.db, [{ queue: 'receipt', ref: 'now', runAt: NOW }], NOW - 10);
    assert.equal(await hasDueJob(store.db, 'receipt', NOW), true);
  });

  test('settled jobs are deleted, rescheduled or released', async () => {
    const store = await open();
    await enqueueJobs(store.db, ['a', 'b', 'c', 'd'].map((ref) => ({ queue: 'webhook' as const, ref, runAt: NOW })), NOW);
    const claimed = await claimJobs(store.db, 'webhook', 10, NOW, LEASE);
    const id = (ref: string) => claimed.find((j) => j.ref === ref)!.id;
    await deleteJobs(store.db, [id('a'), id('b')]);
    await rescheduleJob(store.db, id('c'), NOW + 5000);
    await releaseJobs(store.db, [id('d')], NOW);
    await releaseJobs(store.db, [], NOW);
    assert.deepEqual(
      (await jobs(store)).map((j) => [j.ref, j.run_at]),
      [
        ['c', NOW + 5000],
        ['d', NOW],
      ],
    );
  });

  test('the dispatch backlog by account: the largest and the oldest-waiting, each list bounded, largest first', async () => {
    const store = await open();
    // acc_big: 4 waiting, acc_mid: 3, acc_old: 1 but the oldest, acc_new: 1 and the newest;
    // a job staged for later and another queue's job are not in the backlog.
    const dispatch = (accountId: string, n: number, createdAt: number) =>
      enqueueJobs(store.db, Array.from({ length: n }, (_, i) => ({ queue: 'dispatch' as const, accountId, ref: `${accountId}_${i}`, runAt: createdAt })), createdAt);
    await dispatch('acc_old', 1, NOW - 60_000);
    await dispatch('acc_big', 4, NOW - 2000);
    await dispatch('acc_mid', 3, NOW - 1000);
    await dispatch('acc_new', 1, NOW);
    await dispatch('acc_staged', 5, NOW + 30_000);
    await enqueueJobs(store.db, [{ queue: 'webhook', ref: 'evt_1', runAt: NOW - 90_000 }], NOW - 90_000);
    const shown = async (each: number) => (await dispatchBacklogByAccount(store.db, NOW, each)).map((b) => [b.accountId, b.depth, NOW - b.oldestCreatedAt]);
    assert.deepEqual(await shown(1), [
      ['acc_big', 4, 2000],
      ['acc_old', 1, 60_000],
    ]);
    assert.deepEqual(await shown(2), [
      ['acc_big', 4, 2000],
      ['acc_mid', 3, 1000],
      ['acc_old', 1, 60_000],
    ]);
    assert.equal((await shown(4)).length, 4, 'every account with a backlog, once');
    assert.deepEqual(await dispatchBacklog(store.db, NOW, NOW - 1500), { depth: 9, createdBy: 5, oldestCreatedAt: NOW - 60_000 });
    assert.deepEqual(await dispatchBacklog(store.db, NOW, NOW, 'acc_mid'), { depth: 3, createdBy: 3, oldestCreatedAt: NOW - 1000 });
  });

  if (dialect === 'postgres') {
    test('concurrent claims skip the jobs another transaction holds instead of waiting for it (SKIP LOCKED)', async () => {
      const store = await open();
      await enqueueJobs(store.db, ['a', 'b', 'c'].map((ref) => ({ queue: 'dispatch' as const, accountId: 'acc_1', ref, runAt: NOW })), NOW);
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const isLocked = new Promise<void>((resolve) => (locked = resolve));
      const holder = store.db.transaction().execute(async (trx) => {
        // Another worker's claim, still uncommitted: its rows are locked.
        await trx.selectFrom('jobs').select('id').where('ref', 'in', ['a', 'b']).forUpdate().execute();
        locked();
        await held;
      });
      await isLocked;
      let timer: NodeJS.Timeout | undefined;
      try {
        // Without SKIP LOCKED the claim would wait for the holder, which waits for the claim.
        const waited = new Promise<'waited'>((resolve) => (timer = setTimeout(() => resolve('waited'), 10_000)));
        const claimed = await Promise.race([claimJobs(store.db, 'dispatch', 10, NOW, LEASE), waited]);
        assert.notEqual(claimed, 'waited', 'the claim waited for the locked jobs');
        assert.deepEqual(
          (claimed as { ref: string }[]).map((j) => j.ref),
          ['c'],
        );
      } finally {
        clearTimeout(timer);
        release();
        await holder;
      }
      assert.deepEqual(
        (await claimJobs(store.db, 'dispatch', 10, NOW, LEASE)).map((j) => j.ref).sort(),
        ['a', 'b'],
      );
    });
  }

  if (dialect === 'postgres') {
    test('a dispatch claim beside another that holds the oldest jobs fills its batch from the next ones', async () => {
      const store = await open();
      const refs = Array.from({ length: 8 }, (_, i) => `m${i}`);
      await enqueueJobs(store.db, refs.map((ref, i) => ({ queue: 'dispatch' as const, accountId: 'acc_1', ref, runAt: NOW - 100 + i })), NOW - 100);
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const isLocked = new Promise<void>((resolve) => (locked = resolve));
      const holder = store.db.transaction().execute(async (trx) => {
        // Another loop's claim of the three oldest, not yet committed.
        await trx.selectFrom('jobs').select('id').where('ref', 'in', ['m0', 'm1', 'm2']).forUpdate().execute();
        locked();
        await held;
      });
      await isLocked;
      try {
        assert.deepEqual(
          (await claimJobs(store.db, 'dispatch', 3, NOW, LEASE)).map((j) => j.ref).sort(),
          ['m3', 'm4', 'm5'],
        );
      } finally {
        release();
        await holder;
      }
    });

    test('a claim under row lock: concurrent transactions take disjoint due jobs, oldest first, and a rolled-back one leaves its jobs due, attempts unmoved', async () => {
      const store = await open();
      await enqueueJobs(
        store.db,
        Array.from({ length: 6 }, (_, i) => ({ queue: 'receipt' as const, ref: `r${i}`, runAt: NOW - 100 + i })).concat([{ queue: 'receipt', ref: 'later', runAt: NOW + 1 }]),
        NOW - 100,
      );
      let releaseFirst!: () => void;
      const firstHolds = new Promise<void>((resolve) => (releaseFirst = resolve));
      let firstLocked!: (refs: string[]) => void;
      const locked = new Promise<string[]>((resolve) => (firstLocked = resolve));
      const first = store.db
        .transaction()
        .execute(async (trx) => {
          firstLocked((await lockDueJobs(trx, 'receipt', 4, NOW)).map((j) => j.ref));
          await firstHolds;
          throw new Error('the handler failed');
        })
        .catch((err: Error) => err.message);
      assert.deepEqual(await locked, ['r0', 'r1', 'r2', 'r3']);
      const second = await store.db.transaction().execute((trx) => lockDueJobs(trx, 'receipt', 10, NOW));
      assert.deepEqual(
        second.map((j) => j.ref),
        ['r4', 'r5'],
      );
      releaseFirst();
      assert.equal(await first, 'the handler failed');
      // Rolled back: due again at once, nothing written.
      const again = await store.db.transaction().execute((trx) => lockDueJobs(trx, 'receipt', 10, NOW));
      assert.deepEqual(
        again.map((j) => [j.ref, j.run_at, j.attempts]),
        Array.from({ length: 6 }, (_, i) => [`r${i}`, NOW - 100 + i, 0]),
      );
      await retryJobsAt(store.db, ['r0', 'r1'].map((ref) => again.find((j) => j.ref === ref)!.id), NOW + 1000);
      assert.deepEqual(
        (await jobs(store)).filter((j) => j.ref === 'r0' || j.ref === 'r1').map((j) => [j.run_at, j.attempts]),
        [
          [NOW + 1000, 1],
          [NOW + 1000, 1],
        ],
      );
    });

    test('receipts claimed under lock: one for no known message is retried, each claim counted, until its attempts run out and it is dropped', async () => {
      const store = await open();
      let now = NOW;
      const ctx = { ...serviceContext(store), clock: () => now };
      await enqueueJobs(store.db, [{ queue: 'receipt', ref: 'carrier_x', payload: { carrierMessageId: 'carrier_x', status: 'delivered', at: NOW }, runAt: NOW }], NOW);
      let claims = 0;
      while ((await jobs(store)).length > 0 && claims < 100) {
        assert.equal(await claimAndApplyReceipts(ctx, 10), 1);
        claims++;
        // Not due again before its retry time.
        assert.equal(await claimAndApplyReceipts(ctx, 10), 0);
        now += 1000;
      }
      assert.equal(claims, 30);
    });
  }
});
