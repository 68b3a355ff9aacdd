/**
 * Messages carriers delivered to numbers (src/services/inbound/inbound.ts): those of an account,
 * listed by `GET /v1/sms/inbound`, and the unrouted ones (to a number nobody holds) kept for the
 * operator.
 */
import { sql, type SqlBool } from 'kysely';
import type { Executor } from '../connect.ts';
import type { InboundMessagesTable } from '../database.ts';

export type InboundRow = InboundMessagesTable;

export interface InboundFilter {
  accountId: string;
  from?: string;
  to?: string;
  /** Received at or after (ms). */
  since?: number;
  /** Received at or before (ms). */
  until?: number;
}

export async function insertInbound(db: Executor, row: InboundRow): Promise<void> {
  await db.insertInto('inbound_messages').values(row).execute();
}

function filtered(db: Executor, f: InboundFilter) {
  let q = db.selectFrom('inbound_messages').where('account_id', '=', f.accountId);
  if (f.from !== undefined) q = q.where('sender', '=', f.from);
  if (f.to !== undefined) q = q.where('recipient', '=', f.to);
  if (f.since !== undefined) q = q.where('received_at', '>=', f.since);
  if (f.until !== undefined) q = q.where('received_at', '<=', f.until);
  return q;
}

/** One page of the account's inbound messages, newest first (ties by id, descending), and how many match. */
export async function inboundPage(db: Executor, filter: InboundFilter, limit: number, offset: number): Promise<{ rows: InboundRow[]; total: number }> {
  const rows = await filtered(db, filter).selectAll().orderBy('received_at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute();
  const count = await filtered(db, filter).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return { rows, total: Number(count.n) };
}

/** Inbound messages to numbers no account held when they came, newest first. */
export async function unroutedInbound(db: Executor, limit: number): Promise<InboundRow[]> {
  return db.selectFrom('inbound_messages').selectAll().where('account_id', 'is', null).orderBy('received_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
}

export async function inboundById(db: Executor, id: string): Promise<InboundRow | undefined> {
  return db.selectFrom('inbound_messages').selectAll().where('id', '=', id).executeTakeFirst();
}

/** A correspondent of the account's inbox: who wrote, when last, how many messages. */
export interface CorrespondentRow {
  sender: string;
  last_at: number;
  count: number;
}

/** LIKE pattern of `text` anywhere, with the wildcards of the text escaped. */
function containing(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * The people who wrote to the account, most recent first, at most `limit`; `search` keeps those
 * whose number or one of whose messages contains it.
 */
export async function correspondents(db: Executor, accountId: string, search: string | undefined, limit: number): Promise<CorrespondentRow[]> {
  let q = db
    .selectFrom('inbound_messages')
    .select(['sender', (eb) => eb.fn.max('received_at').as('last_at'), (eb) => eb.fn.countAll<number>().as('count')])
    .where('account_id', '=', accountId);
  if (search) {
    const pattern = containing(search);
    // ESCAPE names the backslash: PostgreSQL assumes it, SQLite has no escape character without it.
    q = q.where((eb) => eb.or([sql<SqlBool>`sender like ${pattern} escape '\\'`, sql<SqlBool>`body like ${pattern} escape '\\'`]));
  }
  const rows = await q.groupBy('sender').orderBy((eb) => eb.fn.max('received_at'), 'desc').orderBy('sender').limit(limit).execute();
  return rows.map((r) => ({ sender: r.sender, last_at: Number(r.last_at), count: Number(r.count) }));
}

/** What one correspondent sent the account, newest first, at most `limit`. */
export async function inboundFrom(db: Executor, accountId: string, sender: string, limit: number): Promise<InboundRow[]> {
  return db.selectFrom('inbound_messages').selectAll().where('account_id', '=', accountId).where('sender', '=', sender).orderBy('received_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
}

/** Replaces an inbound message's sender and text (redaction). */
export async function setInboundSenderAndBody(db: Executor, id: string, sender: string, body: string): Promise<void> {
  await db.updateTable('inbound_messages').set({ sender, body }).where('id', '=', id).execute();
}
