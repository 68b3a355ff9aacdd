import { sql } from 'kysely';
import type { Executor } from '../connect.ts';
import { dialectOf } from '../dialect.ts';
import type { IdempotencyKeysTable } from '../database.ts';

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

export type IdempotencyKeyRow = IdempotencyKeysTable;

/** Records a key as taken; throws the driver's unique violation when the account already holds it. */
export async function insertIdempotencyKey(db: Executor, row: IdempotencyKeyRow): Promise<void> {
  await db.insertInto('idempotency_keys').values(row).execute();
}

export async function idempotencyKeyRow(db: Executor, accountId: string, key: string): Promise<IdempotencyKeyRow | undefined> {
  return db.selectFrom('idempotency_keys').selectAll().where('account_id', '=', accountId).where('key', '=', key).executeTakeFirst();
}

/** Deletes the key if it still expires at `expiresAt` (a taker that renewed it keeps it). */
export async function deleteExpiredIdempotencyKey(db: Executor, accountId: string, key: string, expiresAt: number): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('account_id', '=', accountId).where('key', '=', key).where('expires_at', '=', expiresAt).execute();
}

/**
 * Takes over an in-progress key whose lock ended at `lockedUntil` (its holder died), locking it
 * until `newLockedUntil`; false if another request took it first or it finished meanwhile.
 */
export async function takeOverIdempotencyKey(db: Executor, accountId: string, key: string, lockedUntil: number, newLockedUntil: number): Promise<boolean> {
  const taken = await db
    .updateTable('idempotency_keys')
    .set({ locked_until: newLockedUntil })
    .where('account_id', '=', accountId)
    .where('key', '=', key)
    .where('state', '=', 'in_progress')
    .where('locked_until', '=', lockedUntil)
    .executeTakeFirst();
  return taken.numUpdatedRows === 1n;
}

/** Stores the result of the key's request (`body` already in its stored form). */
export async function finishIdempotencyKey(db: Executor, accountId: string, key: string, status: number, body: string): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({ state: 'done', response_status: status, response_body: body })
    .where('account_id', '=', accountId)
    .where('key', '=', key)
    .execute();
}

/**
 * `finishIdempotencyKey` for many keys: on PostgreSQL one UPDATE from arrays (a group of sends
 * commits its keys' results in one round trip), on SQLite one prepared UPDATE per key.
 */
export async function finishIdempotencyKeys(db: Executor, rows: { accountId: string; key: string; status: number; body: string }[]): Promise<void> {
  if (dialectOf(db) === 'sqlite') {
    for (const r of rows) await finishIdempotencyKey(db, r.accountId, r.key, r.status, r.body);
    return;
  }
  if (rows.length === 0) return;
  await sql`update idempotency_keys set state = 'done', response_status = t.status, response_body = t.body
    from unnest(${rows.map((r) => r.accountId)}::text[], ${rows.map((r) => r.key)}::text[], ${rows.map((r) => r.status)}::integer[], ${rows.map((r) => r.body)}::text[])
      as t(account_id, key, status, body)
    where idempotency_keys.account_id = t.account_id and idempotency_keys.key = t.key`.execute(db);
}

/** Frees a key whose request ended without a result to keep. */
export async function releaseIdempotencyKey(db: Executor, accountId: string, key: string): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('account_id', '=', accountId).where('key', '=', key).where('state', '=', 'in_progress').execute();
}
