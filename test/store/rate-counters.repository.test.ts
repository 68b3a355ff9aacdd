/** Fixed-window rate counters: counted atomically, started over when the window has passed. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Store } from '../../src/store/connect.ts';
import { countEvent, deleteStaleCounters, uncountEvent } from '../../src/store/repositories/rate-counters.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';

const NOW = 1_800_000_000_000;
const WINDOW = 60_000;

async function counters(store: Store) {
  const rows = await store.db.selectFrom('rate_counters').selectAll().orderBy('key').execute();
  return rows.map((r) => ({ key: r.key, count: Number(r.count), window_started_at: Number(r.window_started_at) }));
}

describe('rate-counters repository', () => {
  forEachDialect((_dialect, open) => {
    it('counts events per key within the window, and starts over once it has passed', async () => {
      const store = await open();
      assert.deepEqual(await countEvent(store, 'ip:a', WINDOW, NOW), { count: 1, windowStartedAt: NOW });
      assert.deepEqual(await countEvent(store, 'ip:a', WINDOW, NOW + 10), { count: 2, windowStartedAt: NOW });
      assert.deepEqual(await countEvent(store, 'ip:b', WINDOW, NOW + 20), { count: 1, windowStartedAt: NOW + 20 });
      // The last moment of the window still counts in it; at its end a new one starts.
      assert.deepEqual(await countEvent(store, 'ip:a', WINDOW, NOW + WINDOW - 1), { count: 3, windowStartedAt: NOW });
      assert.deepEqual(await countEvent(store, 'ip:a', WINDOW, NOW + WINDOW), { count: 1, windowStartedAt: NOW + WINDOW });
      assert.deepEqual(await countEvent(store, 'ip:a', WINDOW, NOW + WINDOW + 5), { count: 2, windowStartedAt: NOW + WINDOW });
      assert.deepEqual(await counters(store), [
        { key: 'ip:a', count: 2, window_started_at: NOW + WINDOW },
        { key: 'ip:b', count: 1, window_started_at: NOW + 20 },
      ]);
    });

    it('counts concurrent events exactly once each', async () => {
      const store = await open();
      const n = 40;
      const results = await Promise.all(Array.from({ length: n }, () => countEvent(store, 'signup:x', WINDOW, NOW)));
      // Each caller sees a different count: no two pass a limit on the same room.
      assert.deepEqual(
        results.map((r) => r.count).sort((a, b) => a - b),
        Array.from({ length: n }, (_, i) => i + 1),
      );
      assert.deepEqual(await counters(store), [{ key: 'signup:x', count: n, window_started_at: NOW }]);
    });

    it('gives back one event, never below zero, and leaves other keys alone', async () => {
      const store = await open();
      await countEvent(store, 'k1', WINDOW, NOW);
      await countEvent(store, 'k1', WINDOW, NOW);
      await countEvent(store, 'k2', WINDOW, NOW);
      await uncountEvent(store, 'k1');
      assert.deepEqual(await counters(store), [
        { key: 'k1', count: 1, window_started_at: NOW },
        { key: 'k2', count: 1, window_started_at: NOW },
      ]);
      await uncountEvent(store, 'k1');
      await uncountEvent(store, 'k1');
      await uncountEvent(store, 'unknown');
      assert.deepEqual(await counters(store), [
        { key: 'k1', count: 0, window_started_at: NOW },
        { key: 'k2', count: 1, window_started_at: NOW },
      ]);
      assert.deepEqual(await countEvent(store, 'k1', WINDOW, NOW + 1), { count: 1, windowStartedAt: NOW });
    });

    it('deletes the counters whose window started at or before the cut-off', async () => {
      const store = await open();
      await countEvent(store, 'old', WINDOW, NOW - 2);
      await countEvent(store, 'edge', WINDOW, NOW - 1);
      await countEvent(store, 'new', WINDOW, NOW);
      await deleteStaleCounters(store, NOW - 1);
      assert.deepEqual(await counters(store), [{ key: 'new', count: 1, window_started_at: NOW }]);
    });
  });
});
