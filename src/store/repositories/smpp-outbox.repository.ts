/**
 * What SMPP users are owed: the receipt details of the messages they submitted (`smpp_messages`)
 * and the deliver_sm waiting for one of their receiver binds (`smpp_outbox`). A delivery is taken
 * by moving its `next_at` past the answer timeout, so two processes holding binds of one user
 * never send the same one at once.
 */
import { sql } from 'kysely';
import type { Executor } from '../connect.ts';
import { dialectOf } from '../dialect.ts';
import type { SmppMessagesTable, SmppOutboxTable } from '../database.ts';
import { insertRows } from '../insert-rows.ts';

export type SmppMessageRow = SmppMessagesTable;
export type SmppOutboxRow = SmppOutboxTable;

/** The SMPP details of a group of accepted messages, in one multi-row insert. */
export async function insertSmppMessages(db: Executor, rows: readonly SmppMessageRow[]): Promise<void> {
  await insertRows(db, 'smpp_messages', rows);
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
 * (when it is due again unless answered), in one statement. On PostgreSQL the due rows are locked
 * with `FOR UPDATE SKIP LOCKED` in a materialised CTE (as the job claims are: a plain `IN
 * (subquery)` may be run again per row), so two processes holding binds of one user take disjoint
 * rows; SQLite has one writer at a time, so the subquery is atomic there already.
 */
export async function takeSmppDeliveries(db: Executor, systemId: string, now: number, holdUntil: number, limit: number): Promise<SmppOutboxRow[]> {
  let rows: SmppOutboxRow[];
  if (dialectOf(db) === 'postgres') {
    ({ rows } = await sql<SmppOutboxRow>`
      with due as materialized (
        select id from smpp_outbox
        where system_id = ${systemId} and next_at <= ${now} and expires_at > ${now}
        order by created_at, id
        limit ${limit}
        for update skip locked
      )
      update smpp_outbox set next_at = ${holdUntil}, attempts = smpp_outbox.attempts + 1
      from due
      where smpp_outbox.id = due.id
      returning smpp_outbox.*`.execute(db));
  } else {
    const due = db
      .selectFrom('smpp_outbox')
      .select('id')
      .where('system_id', '=', systemId)
      .where('next_at', '<=', now)
      .where('expires_at', '>', now)
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit);
    rows = await db
      .updateTable('smpp_outbox')
      .set({ next_at: holdUntil, attempts: sql<number>`attempts + 1` })
      .where('id', 'in', due)
      .returningAll()
      .execute();
  }
  return rows.map(numeric).sort((x, y) => x.created_at - y.created_at || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
}

/** Due again at `nextAt` (a temporary refusal). */
export async function postponeSmppDelivery(db: Executor, id: string, nextAt: number): Promise<void> {
  await db.updateTable('smpp_outbox').set({ next_at: nextAt }).where('id', '=', id).execute();
}

/** Due again at `now`: out on a link that closed before it answered. */
export async function releaseSmppDeliveries(db: Executor, ids: readonly string[], now: number): Promise<void> {
  if (ids.length === 0) return;
  await db.updateTable('smpp_outbox').set({ next_at: now }).where('id', 'in', [...ids]).execute();
}

/** Answered (or refused for good): gone. */
export async function deleteSmppDeliveries(db: Executor, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await db.deleteFrom('smpp_outbox').where('id', 'in', [...ids]).execute();
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
