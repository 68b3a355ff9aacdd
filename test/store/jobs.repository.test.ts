import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ACCOUNTS_PER_CLAIM, claimJobs, deleteJobs, enqueueJobs, queueDepth, releaseJobs, rescheduleJob } from '../../src/store/repositories/jobs.repository.ts';
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
    assert.deepEqual(await queueDepth(store.db, 'dispatch'), { depth: 4, oldestCreatedAt: NOW - 100 });
    assert.deepEqual(await queueDepth(store.db, 'webhook'), { depth: 0, oldestCreatedAt: null });
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
});
