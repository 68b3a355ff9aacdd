/** Fixed-window counters of `rate_counters`, counted atomically on both databases. */
import { sql } from 'kysely';
import type { Store } from '../connect.ts';

/**
 * Counts one event for `key` in a window of `windowMs` and returns the count including it and
 * when the window started. A window older than `windowMs` starts over at this event.
 */
export async function countEvent(store: Store, key: string, windowMs: number, now: number): Promise<{ count: number; windowStartedAt: number }> {
  const row = await store.db
    .insertInto('rate_counters')
    .values({ key, count: 1, window_started_at: now })
    .onConflict((oc) =>
      oc.column('key').doUpdateSet({
        count: sql<number>`case when rate_counters.window_started_at <= ${now - windowMs} then 1 else rate_counters.count + 1 end`,
        window_started_at: sql<number>`case when rate_counters.window_started_at <= ${now - windowMs} then ${now} else rate_counters.window_started_at end`,
      }),
    )
    .returning(['count', 'window_started_at'])
    .executeTakeFirstOrThrow();
  return { count: Number(row.count), windowStartedAt: Number(row.window_started_at) };
}

/** Deletes counters whose window started at or before `before` (they would start over anyway). */
export async function deleteStaleCounters(store: Store, before: number): Promise<void> {
  await store.db.deleteFrom('rate_counters').where('window_started_at', '<=', before).execute();
}

/** Gives back one counted event (one that turned out not to count, such as a refused sign-up). */
export async function uncountEvent(store: Store, key: string): Promise<void> {
  await store.db.updateTable('rate_counters').set({ count: sql<number>`count - 1` }).where('key', '=', key).where('count', '>', 0).execute();
}
