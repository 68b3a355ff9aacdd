/**
 * Parts of multi-part inbound messages (src/services/inbound/inbound.ts), stored as they arrive.
 * When their message is stored (whole, or incomplete after the timeout) the group stays a while
 * longer with a `seq` 0 row that marks it done, so that a part the carrier sends again (its answer
 * was lost to a crash or a dropped link) is known as already stored; the sweep removes done
 * groups later.
 */
import { sql } from 'kysely';
import type { Executor } from '../connect.ts';
import type { InboundPartsTable } from '../database.ts';
import { dialectOf } from '../dialect.ts';

export type InboundPartRow = InboundPartsTable;

/** The `seq` of the row that marks a group whose message is stored; parts count from 1. */
export const DONE_SEQ = 0;

/**
 * Serialises the work on one message's parts across transactions: on PostgreSQL a transaction
 * advisory lock on the group (two parts arriving at once would otherwise each miss the other);
 * SQLite has one writer, and a write transaction's BEGIN IMMEDIATE takes its lock.
 */
export async function lockPartGroup(trx: Executor, groupKey: string): Promise<void> {
  if (dialectOf(trx) === 'postgres') await sql`select pg_advisory_xact_lock(hashtext(${groupKey}))`.execute(trx);
}

/** Stores a part; a part already stored (the carrier sent it again) is left as it was. */
export async function insertPart(db: Executor, row: InboundPartRow): Promise<void> {
  await db.insertInto('inbound_parts').values(row).onConflict((oc) => oc.columns(['group_key', 'seq']).doNothing()).execute();
}

/** Marks the group done: its message is stored (the parts stay, to recognise a repeated one). */
export async function markGroupDone(db: Executor, first: InboundPartRow, now: number): Promise<void> {
  await db.insertInto('inbound_parts').values({ ...first, seq: DONE_SEQ, body: '', received_at: now }).onConflict((oc) => oc.columns(['group_key', 'seq']).doNothing()).execute();
}

/**
 * The tables of parts kept by group with a `seq` 0 done mark: inbound parts from carriers, and
 * parts submitted over SMPP (smpp-parts.repository.ts). The group queries below serve both.
 */
export type PartGroupsTable = 'inbound_parts' | 'smpp_parts';

/** Removes the done groups marked before `before`; returns how many rows went. */
export async function deleteDoneGroups(db: Executor, before: number, table: PartGroupsTable = 'inbound_parts'): Promise<number> {
  const done = db.selectFrom(table).select('group_key').where('seq', '=', DONE_SEQ).where('received_at', '<', before);
  const result = await db.deleteFrom(table).where('group_key', 'in', done).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** The group's rows in order of `seq` (its done mark first, if it has one). */
export async function partsOfGroup(db: Executor, groupKey: string): Promise<InboundPartRow[]> {
  return db.selectFrom('inbound_parts').selectAll().where('group_key', '=', groupKey).orderBy('seq').execute();
}

export async function deletePartGroup(db: Executor, groupKey: string): Promise<void> {
  await db.deleteFrom('inbound_parts').where('group_key', '=', groupKey).execute();
}

/** Groups not done whose first part came before `before`, oldest first, at most `limit`. */
export async function staleGroups(db: Executor, before: number, limit: number, table: PartGroupsTable = 'inbound_parts'): Promise<string[]> {
  const rows = await db
    .selectFrom(table)
    .select('group_key')
    .groupBy('group_key')
    .having((eb) => eb.fn.min('received_at'), '<', before)
    .having((eb) => eb.fn.min('seq'), '>', DONE_SEQ)
    .orderBy((eb) => eb.fn.min('received_at'))
    .limit(limit)
    .execute();
  return rows.map((r) => r.group_key);
}
