import assert from 'node:assert/strict';
import { test } from 'node:test';
import { claimJobs, deleteJobs, enqueueJobs, queueDepth, releaseJobs, rescheduleJob } from '../../src/store/repositories/jobs.repository.ts';
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
        { queue: 'dispatch', ref: 'msg_b', runAt: NOW - 10 },
        { queue: 'dispatch', ref: 'msg_a', runAt: NOW - 20 },
        { queue: 'dispatch', ref: 'msg_c', runAt: NOW - 5, payload: { part: 2 } },
        { queue: 'dispatch', ref: 'msg_later', runAt: NOW + 10 * LEASE },
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
      await enqueueJobs(store.db, ['a', 'b', 'c'].map((ref) => ({ queue: 'dispatch' as const, ref, runAt: NOW })), NOW);
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
