/**
 * Parts of multi-part inbound messages (src/services/inbound/inbound.ts), stored as they arrive
 * and removed when their message is stored whole or timed out.
 */
import { sql } from 'kysely';
import type { Executor } from '../connect.ts';
import type { InboundPartsTable } from '../database.ts';
import { dialectOf } from '../dialect.ts';

export type InboundPartRow = InboundPartsTable;

/**
 * Serialises the work on one message's parts across transactions: on PostgreSQL a transaction
 * advisory lock on the group (two parts arriving at once would otherwise each miss the other);
 * SQLite has one writer, and the part's insert, made first, takes its lock.
 */
export async function lockPartGroup(trx: Executor, groupKey: string): Promise<void> {
  if (dialectOf(trx) === 'postgres') await sql`select pg_advisory_xact_lock(hashtext(${groupKey}))`.execute(trx);
}

/** Stores a part; a part already stored (the carrier sent it again) is left as it was. */
export async function insertPart(db: Executor, row: InboundPartRow): Promise<void> {
  await db.insertInto('inbound_parts').values(row).onConflict((oc) => oc.columns(['group_key', 'seq']).doNothing()).execute();
}

/** The group's parts, in order. */
export async function partsOfGroup(db: Executor, groupKey: string): Promise<InboundPartRow[]> {
  return db.selectFrom('inbound_parts').selectAll().where('group_key', '=', groupKey).orderBy('seq').execute();
}

export async function deletePartGroup(db: Executor, groupKey: string): Promise<void> {
  await db.deleteFrom('inbound_parts').where('group_key', '=', groupKey).execute();
}

/** Groups whose first part came before `before`, oldest first, at most `limit`. */
export async function staleGroups(db: Executor, before: number, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('inbound_parts')
    .select('group_key')
    .groupBy('group_key')
    .having((eb) => eb.fn.min('received_at'), '<', before)
    .orderBy((eb) => eb.fn.min('received_at'))
    .limit(limit)
    .execute();
  return rows.map((r) => r.group_key);
}
