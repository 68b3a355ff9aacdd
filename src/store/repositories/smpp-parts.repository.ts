/**
 * Parts of long messages submitted over SMPP (src/services/smpp-access/smpp-parts.ts), stored as they come,
 * with a `seq` 0 row marking a group whose message was accepted or refused (migration 026).
 * Work on one group is serialised by `lockPartGroup` (inbound-parts.repository.ts).
 */
import type { Executor } from '../connect.ts';
import type { SmppPartsTable } from '../database.ts';

export type SmppPartRow = SmppPartsTable;

/** The `seq` of the row that marks a done group; parts count from 1. */
export const DONE_SEQ = 0;

const numeric = (r: SmppPartRow): SmppPartRow => ({
  ...r,
  seq: Number(r.seq),
  total: Number(r.total),
  data_coding: Number(r.data_coding),
  registered_delivery: Number(r.registered_delivery),
  source_ton: Number(r.source_ton),
  received_at: Number(r.received_at),
});

/** Stores a part; one already stored (sent again) is left as it was. */
export async function insertSmppPart(db: Executor, row: SmppPartRow): Promise<void> {
  await db.insertInto('smpp_parts').values(row).onConflict((oc) => oc.columns(['group_key', 'seq']).doNothing()).execute();
}

/** The group's rows in order of `seq` (its done mark first, if it has one). */
export async function smppPartsOfGroup(db: Executor, groupKey: string): Promise<SmppPartRow[]> {
  const rows = await db.selectFrom('smpp_parts').selectAll().where('group_key', '=', groupKey).orderBy('seq').execute();
  return rows.map(numeric);
}

/** Marks the group done (its message accepted or refused); its parts stay to recognise one sent again. */
export async function markSmppPartsDone(db: Executor, first: SmppPartRow, now: number): Promise<void> {
  await db
    .insertInto('smpp_parts')
    .values({ ...first, seq: DONE_SEQ, payload: '', received_at: now })
    .onConflict((oc) => oc.columns(['group_key', 'seq']).doNothing())
    .execute();
}

/** Groups not done whose first part came before `before`, oldest first, at most `limit`. */
export async function staleSmppPartGroups(db: Executor, before: number, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('smpp_parts')
    .select('group_key')
    .groupBy('group_key')
    .having((eb) => eb.fn.min('received_at'), '<', before)
    .having((eb) => eb.fn.min('seq'), '>', DONE_SEQ)
    .orderBy((eb) => eb.fn.min('received_at'))
    .limit(limit)
    .execute();
  return rows.map((r) => r.group_key);
}

/** Removes the groups marked done before `before`; returns how many rows went. */
export async function deleteDoneSmppPartGroups(db: Executor, before: number): Promise<number> {
  const done = db.selectFrom('smpp_parts').select('group_key').where('seq', '=', DONE_SEQ).where('received_at', '<', before);
  const result = await db.deleteFrom('smpp_parts').where('group_key', 'in', done).executeTakeFirst();
  return Number(result.numDeletedRows);
}
