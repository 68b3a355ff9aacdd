/**
 * Rows of `login_throttle`: per key (scope, e-mail and client address, or the address alone) the
 * attempts counted in the current window, the lockout and how many lockouts came in a row.
 */
import type { Store } from '../connect.ts';
import type { LoginThrottleTable } from '../database.ts';

/** The latest `locked_until` among the keys (0 when none is locked). */
export async function latestLockout(store: Store, keys: string[]): Promise<number> {
  const rows = await store.db.selectFrom('login_throttle').select('locked_until').where('key', 'in', keys).execute();
  return Math.max(0, ...rows.map((r) => (r.locked_until == null ? 0 : Number(r.locked_until))));
}

/**
 * Reads one key's row and writes what `decide` makes of it, in one transaction that holds the row
 * (BEGIN IMMEDIATE on SQLite, a row lock on PostgreSQL), so that parallel attempts on the same key
 * are counted one after the other. `decide` returns the new row, or null to delete it.
 */
export async function updateThrottleRow<T>(
  store: Store,
  key: string,
  decide: (row: LoginThrottleTable | undefined) => { next: Omit<LoginThrottleTable, 'key'> | null; result: T },
): Promise<T> {
  return store.db.transaction().execute(async (trx) => {
    if (store.dialect === 'postgres') {
      // A placeholder row to lock, so that the first attempts on a new key also wait for each other.
      await trx
        .insertInto('login_throttle')
        .values({ key, failures: 0, window_started_at: 0, locked_until: null, lockouts: 0 })
        .onConflict((oc) => oc.column('key').doNothing())
        .execute();
    }
    const found = await trx
      .selectFrom('login_throttle')
      .selectAll()
      .where('key', '=', key)
      .$if(store.dialect === 'postgres', (qb) => qb.forUpdate())
      .executeTakeFirst();
    // PostgreSQL's placeholder (no failures, a window long over, no lockout) reads as a fresh key.
    const { next, result } = decide(found);
    if (next === null) await trx.deleteFrom('login_throttle').where('key', '=', key).execute();
    else if (found) await trx.updateTable('login_throttle').set(next).where('key', '=', key).execute();
    else await trx.insertInto('login_throttle').values({ key, ...next }).execute();
    return result;
  });
}
