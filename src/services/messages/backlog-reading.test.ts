/** The dispatch backlog's reading on a SQLite file: counted on a reader thread, not on the event loop. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../../errors/catalogue.ts';
import { enqueueJobs } from '../../store/repositories/jobs.repository.ts';
import { openTestStore, serviceContext } from '../../../test/helpers/test-store.ts';
import { addAccount } from '../../../test/store/fixtures.ts';
import { checkBacklog } from './backlog.ts';

test('checkBacklog on a SQLite file counts the waiting messages through the read pool, and refuses past the limit', async () => {
  const store = await openTestStore('sqlite');
  try {
    await addAccount(store, 'acc_a');
    const now = Date.now();
    await enqueueJobs(store.db, Array.from({ length: 5 }, (_, i) => ({ queue: 'dispatch' as const, accountId: 'acc_a', ref: `msg_${i}`, runAt: now })), now);
    let pooled = 0;
    const readAll = store.readAll!;
    const counted = { ...store, readAll: ((query) => (pooled++, readAll(query))) as typeof readAll };
    const ctx = serviceContext(counted, { DISPATCH_BACKLOG_LIMIT: '5' });
    // A scan of the whole queue (tens of thousands of jobs during a flood) would hold every request.
    await assert.rejects(checkBacklog(ctx, 'acc_a', 1), (e: unknown) => e instanceof AppError && e.code === 'service_unavailable');
    assert.ok(pooled >= 1, 'the reading ran on the read pool');
  } finally {
    await store.close();
  }
});
