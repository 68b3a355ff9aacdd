/** The login throttle's rows and the fixed-window rate counters, counted one after the other. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { latestLockout, updateThrottleRow } from '../../src/store/repositories/login-throttle.repository.ts';
import { countEvent, deleteStaleCounters, uncountEvent } from '../../src/store/repositories/rate-counters.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';

describe('login throttle repository', () => {
  forEachDialect((_dialect, open) => {
    it('writes, updates and deletes a key, and reads the latest lockout of several keys', async () => {
      const store = await open();
      assert.equal(await latestLockout(store, ['a', 'b']), 0);
      await updateThrottleRow(store, 'a', () => ({ next: { failures: 1, window_started_at: 10, locked_until: 500, lockouts: 1 }, result: undefined }));
      await updateThrottleRow(store, 'b', () => ({ next: { failures: 2, window_started_at: 10, locked_until: 900, lockouts: 1 }, result: undefined }));
      assert.equal(await latestLockout(store, ['a', 'b']), 900);
      const seen = await updateThrottleRow(store, 'a', (row) => ({ next: row ? { ...row, failures: row.failures + 1 } : null, result: row?.failures }));
      assert.equal(seen, 1);
      await updateThrottleRow(store, 'b', () => ({ next: null, result: undefined }));
      assert.equal(await latestLockout(store, ['a', 'b']), 500);
      const rows = await store.db.selectFrom('login_throttle').selectAll().execute();
      assert.deepEqual(rows, [{ key: 'a', failures: 2, window_started_at: 10, locked_until: 500, lockouts: 1 }]);
    });

    it('counts parallel attempts on a new key one after the other', async () => {
      const store = await open();
      const seen = await Promise.all(
        Array.from({ length: 8 }, () =>
          updateThrottleRow(store, 'k', (row) => {
            // PostgreSQL's placeholder row reads as a fresh key (no failures).
            const failures = (row?.failures ?? 0) + 1;
            return { next: { failures, window_started_at: 1, locked_until: null, lockouts: 0 }, result: failures };
          }),
        ),
      );
      assert.deepEqual(seen.sort((a, b) => a - b), [1, 2, 3, 4, 5, 6, 7, 8]);
    });
  });
});

describe('rate counters repository', () => {
  forEachDialect((_dialect, open) => {
    it('counts within a window and starts over after it', async () => {
      const store = await open();
      assert.deepEqual(await countEvent(store, 'k', 100, 1_000), { count: 1, windowStartedAt: 1_000 });
      assert.deepEqual(await countEvent(store, 'k', 100, 1_050), { count: 2, windowStartedAt: 1_000 });
      assert.deepEqual(await countEvent(store, 'k', 100, 1_100), { count: 1, windowStartedAt: 1_100 });
    });

    it('counts parallel events without losing one', async () => {
      const store = await open();
      const counts = await Promise.all(Array.from({ length: 10 }, () => countEvent(store, 'k', 1_000, 5)));
      assert.deepEqual(counts.map((c) => c.count).sort((a, b) => a - b), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    });

    it('gives an event back, never below zero, and sweeps stale counters', async () => {
      const store = await open();
      await countEvent(store, 'k', 100, 1_000);
      await uncountEvent(store, 'k');
      await uncountEvent(store, 'k');
      assert.equal((await countEvent(store, 'k', 100, 1_010)).count, 1);
      await countEvent(store, 'old', 100, 10);
      await deleteStaleCounters(store, 10);
      const keys = (await store.db.selectFrom('rate_counters').select('key').execute()).map((r) => r.key);
      assert.deepEqual(keys, ['k']);
    });
  });
});
