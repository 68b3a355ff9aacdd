import type { Executor } from '../connect.ts';

/**
 * Deletes up to `limit` idempotency keys that expired at or before `now`; returns how many. A
 * bounded batch keeps each statement short, so the sweep never holds the write lock (SQLite) or
 * many row locks (PostgreSQL) for long while sends are recording their keys.
 */
export async function deleteExpiredIdempotencyKeys(db: Executor, now: number, limit: number): Promise<number> {
  const result = await db
    .deleteFrom('idempotency_keys')
    .where(({ eb, refTuple, selectFrom }) =>
      eb(
        refTuple('account_id', 'key'),
        'in',
        selectFrom('idempotency_keys').select(['account_id', 'key']).where('expires_at', '<=', now).limit(limit).$asTuple('account_id', 'key'),
      ),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
