import type { Executor } from '../connect.ts';
import type { MessagesTable } from '../database.ts';
import type { MessageStatus } from '../../domain/message-status.ts';
import { chunked } from '../chunk.ts';
import { insertRows } from '../insert-rows.ts';

export async function insertMessages(db: Executor, rows: MessagesTable[]): Promise<void> {
  await insertRows(db, 'messages', rows);
}

export async function messagesByIds(db: Executor, ids: string[]): Promise<MessagesTable[]> {
  const out: MessagesTable[] = [];
  for (const part of chunked(ids, 1)) {
    out.push(...(await db.selectFrom('messages').selectAll().where('id', 'in', part).execute()));
  }
  return out;
}

export interface ReportFilter {
  accountId: string;
  messageId?: string;
  batchId?: string;
  status?: MessageStatus;
}

function reportQuery(db: Executor, filter: ReportFilter) {
  let base = db.selectFrom('messages').where('account_id', '=', filter.accountId);
  if (filter.messageId !== undefined) base = base.where('id', '=', filter.messageId);
  if (filter.batchId !== undefined) base = base.where('batch_id', '=', filter.batchId);
  if (filter.status !== undefined) base = base.where('status', '=', filter.status);
  return base;
}

/** How many of an account's messages match the filter (an index range count). */
export function countMessagesQuery(db: Executor, filter: ReportFilter) {
  return reportQuery(db, filter).select((eb) => eb.fn.countAll<number>().as('total'));
}

/** What a delivery report shows of a message: not its text, which is the largest column to read. */
export const REPORT_COLUMNS = [
  'id',
  'batch_id',
  'recipient',
  'sender',
  'status',
  'segments',
  'encoding',
  'error_code',
  'error_message',
  'created_at',
  'sent_at',
  'delivered_at',
] as const;
export type ReportRow = Pick<MessagesTable, (typeof REPORT_COLUMNS)[number]>;

/** One page of an account's messages, newest first (ties by id, descending). */
export function listMessagesQuery(db: Executor, filter: ReportFilter, limit: number, offset: number) {
  // The page is found in the filter's index alone (every report index ends in created_at, id),
  // then only its rows are read: with OFFSET, reading whole rows would also read every skipped one.
  const page = reportQuery(db, filter).select('id').orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset);
  return db.selectFrom('messages').select(REPORT_COLUMNS).where('id', 'in', page).orderBy('created_at', 'desc').orderBy('id', 'desc');
}
