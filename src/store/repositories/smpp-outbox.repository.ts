/**
 * What SMPP users are owed: the receipt details of the messages they submitted (`smpp_messages`)
 * and the deliver_sm waiting for one of their receiver binds (`smpp_outbox`). A delivery is taken
 * by moving its `next_at` past the answer timeout under the condition that it is still due, so two
 * processes holding binds of one user never send the same one at once.
 */
import type { Executor } from '../connect.ts';
import type { SmppMessagesTable, SmppOutboxTable } from '../database.ts';

export type SmppMessageRow = SmppMessagesTable;
export type SmppOutboxRow = SmppOutboxTable;

export async function insertSmppMessage(db: Executor, row: SmppMessageRow): Promise<void> {
  await db.insertInto('smpp_messages').values(row).execute();
}

/** The SMPP details of those of `messageIds` that came over SMPP. */
export async function smppMessagesAmong(db: Executor, messageIds: readonly string[]): Promise<SmppMessageRow[]> {
  if (messageIds.length === 0) return [];
  const rows = await db.selectFrom('smpp_messages').selectAll().where('message_id', 'in', [...new Set(messageIds)]).execute();
  return rows.map((r) => ({ ...r, registered_delivery: Number(r.registered_delivery), source_ton: Number(r.source_ton), created_at: Number(r.created_at) }));
}

export async function enqueueSmppDeliveries(db: Executor, rows: readonly SmppOutboxRow[]): Promise<void> {
  if (rows.length === 0) return;
  await db.insertInto('smpp_outbox').values([...rows]).execute();
}

function numeric(r: SmppOutboxRow): SmppOutboxRow {
  return { ...r, attempts: Number(r.attempts), next_at: Number(r.next_at), created_at: Number(r.created_at), expires_at: Number(r.expires_at) };
}

/**
 * Takes up to `limit` of the user's due deliveries, oldest first, holding each until `holdUntil`
 * (when it is due again unless answered). A row another process took first is skipped.
 */
export async function takeSmppDeliveries(db: Executor, systemId: string, now: number, holdUntil: number, limit: number): Promise<SmppOutboxRow[]> {
  const due = await db
    .selectFrom('smpp_outbox')
    .selectAll()
    .where('system_id', '=', systemId)
    .where('next_at', '<=', now)
    .where('expires_at', '>', now)
    .orderBy('created_at', 'asc')
    .orderBy('id', 'asc')
    .limit(limit)
    .execute();
  const taken: SmppOutboxRow[] = [];
  for (const row of due) {
    const result = await db
      .updateTable('smpp_outbox')
      .set({ next_at: holdUntil, attempts: Number(row.attempts) + 1 })
      .where('id', '=', row.id)
      .where('next_at', '=', row.next_at)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 1) taken.push(numeric({ ...row, next_at: holdUntil, attempts: Number(row.attempts) + 1 }));
  }
  return taken;
}

/** Due again at `nextAt` (a temporary refusal). */
export async function postponeSmppDelivery(db: Executor, id: string, nextAt: number): Promise<void> {
  await db.updateTable('smpp_outbox').set({ next_at: nextAt }).where('id', '=', id).execute();
}

/** Answered (or refused for good): gone. */
export async function deleteSmppDelivery(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('smpp_outbox').where('id', '=', id).execute();
}

/** Removes what waited past its own time or was created before `createdBefore`; how many. */
export async function deleteExpiredSmppDeliveries(db: Executor, now: number, createdBefore: number = 0): Promise<number> {
  const result = await db
    .deleteFrom('smpp_outbox')
    .where((eb) => eb.or([eb('expires_at', '<=', now), eb('created_at', '<', createdBefore)]))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Deliveries waiting per user, for those of `systemIds` that have any. */
export async function waitingSmppDeliveries(db: Executor, systemIds: readonly string[], now: number): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (systemIds.length === 0) return out;
  const rows = await db
    .selectFrom('smpp_outbox')
    .select(['system_id', (eb) => eb.fn.countAll<number>().as('n')])
    .where('system_id', 'in', [...new Set(systemIds)])
    .where('expires_at', '>', now)
    .groupBy('system_id')
    .execute();
  for (const r of rows) out.set(r.system_id, Number(r.n));
  return out;
}

/** Deliveries waiting for every user, for /metrics. */
export async function countSmppDeliveries(db: Executor, now: number): Promise<number> {
  const row = await db
    .selectFrom('smpp_outbox')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}
