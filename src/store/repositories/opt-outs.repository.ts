/**
 * Recipients who opted out of an account, and the count of confirmations sent to them
 * (src/services/opt-outs/opt-outs.ts). Sends read an account's list through the access cache
 * (src/services/auth/access.ts); the dispatch re-check reads it per batch.
 */
import { sql } from 'kysely';
import type { Executor } from '../connect.ts';
import type { OptOutsTable } from '../database.ts';
import { chunked } from '../chunk.ts';
import { dialectOf } from '../dialect.ts';

export type OptOutRow = OptOutsTable;

/** Adds the opt-out unless the recipient is already opted out; true when it was added. */
export async function insertOptOut(db: Executor, row: OptOutRow): Promise<boolean> {
  const result = await db.insertInto('opt_outs').values(row).onConflict((oc) => oc.columns(['account_id', 'phone']).doNothing()).executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
}

export async function optOutRow(db: Executor, accountId: string, phone: string): Promise<OptOutRow | undefined> {
  return db.selectFrom('opt_outs').selectAll().where('account_id', '=', accountId).where('phone', '=', phone).executeTakeFirst();
}

/** Removes the opt-out; `onlySource` restricts it to opt-outs of that kind. True when one was removed. */
export async function deleteOptOut(db: Executor, accountId: string, phone: string): Promise<boolean> {
  const result = await db.deleteFrom('opt_outs').where('account_id', '=', accountId).where('phone', '=', phone).executeTakeFirst();
  return result.numDeletedRows !== 0n;
}

/** One page of the account's opt-outs, newest first (ties by phone, descending), and how many match. */
export async function optOutsPage(db: Executor, filter: { accountId: string; phone?: string }, limit: number, offset: number): Promise<{ rows: OptOutRow[]; total: number }> {
  let q = db.selectFrom('opt_outs').where('account_id', '=', filter.accountId);
  if (filter.phone !== undefined) q = q.where('phone', '=', filter.phone);
  const rows = await q.selectAll().orderBy('created_at', 'desc').orderBy('phone', 'desc').limit(limit).offset(offset).execute();
  const count = await q.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return { rows, total: Number(count.n) };
}

/** Up to `limit` of the account's opted-out phones (the access cache keeps short lists whole). */
export async function optedOutPhones(db: Executor, accountId: string, limit: number): Promise<string[]> {
  return (await db.selectFrom('opt_outs').select('phone').where('account_id', '=', accountId).limit(limit).execute()).map((r) => r.phone);
}

/** Which of `phones` are opted out of the account. */
export async function optedOutAmong(db: Executor, accountId: string, phones: readonly string[]): Promise<Set<string>> {
  const out = new Set<string>();
  const unique = [...new Set(phones)];
  if (unique.length === 0) return out;
  if (unique.length >= 64) {
    // A batch (a release, a dispatch, a campaign's rows) usually names more phones than the
    // account has opt-outs: then reading the account's whole list, bounded by the batch's size,
    // is one short index range instead of thousands of probes.
    const list = await db.selectFrom('opt_outs').select('phone').where('account_id', '=', accountId).limit(unique.length).execute();
    if (list.length < unique.length) {
      const wanted = new Set(unique);
      for (const r of list) if (wanted.has(r.phone)) out.add(r.phone);
      return out;
    }
  }
  if (dialectOf(db) === 'postgres') {
    // One array parameter instead of one per phone: a release or dispatch batch passes
    // thousands, and binding each one costs PostgreSQL more than the lookup itself.
    const rows = await db.selectFrom('opt_outs').select('phone').where('account_id', '=', accountId).where(sql<boolean>`phone = any(${unique}::text[])`).execute();
    for (const r of rows) out.add(r.phone);
    return out;
  }
  for (const part of chunked(unique, 1)) {
    for (const r of await db.selectFrom('opt_outs').select('phone').where('account_id', '=', accountId).where('phone', 'in', part).execute()) out.add(r.phone);
  }
  return out;
}

/**
 * Counts one more confirmation to `phone` from `number` on `day`, unless `max` were already sent;
 * true when this one may go.
 */
export async function takeReplySlot(db: Executor, number: string, phone: string, day: number, max: number): Promise<boolean> {
  const row = await db
    .insertInto('opt_out_replies')
    .values({ number, phone, day, count: 1 })
    .onConflict((oc) =>
      oc
        .columns(['number', 'phone', 'day'])
        .doUpdateSet({ count: sql<number>`opt_out_replies.count + 1` })
        .where('opt_out_replies.count', '<', max),
    )
    .returning('count')
    .executeTakeFirst();
  return row !== undefined;
}
