/**
 * Rows of `audit_events` (migration 030): appended in the transaction of the change they record,
 * read a page at a time newest first, and deleted only by the retention purge, oldest first in
 * bounded batches. There is no update: the table's trigger refuses one on both stores.
 */
import type { Executor } from '../connect.ts';
import type { AuditEventsTable } from '../database.ts';

export type AuditEventRow = AuditEventsTable;

export async function insertAuditEvent(db: Executor, row: AuditEventRow): Promise<void> {
  await db.insertInto('audit_events').values(row).execute();
}

export interface AuditEventFilter {
  /** One account's records; undefined: every account's (the operator's view). */
  accountId?: string;
  /** An exact action. */
  action?: string;
  /** Every action of a resource (`api_key` for `api_key.*`). */
  group?: string;
  /** Records at or after this time (ms). */
  since?: number;
}

function filtered(db: Executor, f: AuditEventFilter) {
  let q = db.selectFrom('audit_events');
  if (f.accountId !== undefined) q = q.where('account_id', '=', f.accountId);
  if (f.action !== undefined) q = q.where('action', '=', f.action);
  if (f.group !== undefined) q = q.where('action', 'like', `${f.group}.%`);
  if (f.since !== undefined) q = q.where('at', '>=', f.since);
  return q;
}

/** A page of records, newest first (ties by id, newest first too: ids grow with time). */
export async function listAuditEvents(db: Executor, f: AuditEventFilter, limit: number, offset: number): Promise<AuditEventRow[]> {
  return filtered(db, f).selectAll().orderBy('at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute();
}

export async function countAuditEvents(db: Executor, f: AuditEventFilter): Promise<number> {
  const row = await filtered(db, f).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** Deletes at most `limit` of the oldest records older than `before`; returns how many went. */
export async function deleteAuditEventsBefore(db: Executor, before: number, limit: number): Promise<number> {
  const ids = await db.selectFrom('audit_events').select('id').where('at', '<', before).orderBy('at').orderBy('id').limit(limit).execute();
  if (ids.length === 0) return 0;
  const result = await db
    .deleteFrom('audit_events')
    .where(
      'id',
      'in',
      ids.map((r) => r.id),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
