/**
 * Parts of long messages submitted over SMPP (src/services/smpp-access/smpp-parts.ts), stored as
 * they come, with a `seq` 0 row marking a group whose message was accepted or refused (migration
 * 026). Work on one group is serialised by `lockPartGroup`, and the group sweeps are those of
 * inbound parts (inbound-parts.repository.ts), which keep their groups the same way.
 */
import type { Executor } from '../connect.ts';
import type { SmppPartsTable } from '../database.ts';
import { DONE_SEQ, deleteDoneGroups, staleGroups } from './inbound-parts.repository.ts';

export type SmppPartRow = SmppPartsTable;

export { DONE_SEQ };

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
export function staleSmppPartGroups(db: Executor, before: number, limit: number): Promise<string[]> {
  return staleGroups(db, before, limit, 'smpp_parts');
}

/** Removes the groups marked done before `before`; returns how many rows went. */
export function deleteDoneSmppPartGroups(db: Executor, before: number): Promise<number> {
  return deleteDoneGroups(db, before, 'smpp_parts');
}
