import type { Kysely, Transaction } from 'kysely';
import type { Database, MessagesTable } from '../database.ts';
import type { MessageStatus } from '../../domain/message-status.ts';
import { chunked } from '../chunk.ts';
import { insertRows } from '../insert-rows.ts';

type Executor = Kysely<Database> | Transaction<Database>;

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

/** One page of an account's messages, newest first (ties by id, descending), and the total. */
export async function listMessages(db: Executor, filter: ReportFilter, limit: number, offset: number) {
  let base = db.selectFrom('messages').where('account_id', '=', filter.accountId);
  if (filter.messageId !== undefined) base = base.where('id', '=', filter.messageId);
  if (filter.batchId !== undefined) base = base.where('batch_id', '=', filter.batchId);
  if (filter.status !== undefined) base = base.where('status', '=', filter.status);
  // The page is found in the filter's index alone (every report index ends in created_at, id),
  // then only its rows are read: with OFFSET, reading whole rows would also read every skipped one.
  const [page, count] = await Promise.all([
    base.select('id').orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute(),
    base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
  ]);
  const rows =
    page.length === 0
      ? []
      : await db
          .selectFrom('messages')
          .selectAll()
          .where('id', 'in', page.map((r) => r.id))
          .orderBy('created_at', 'desc')
          .orderBy('id', 'desc')
          .execute();
  return { rows, total: Number(count.total) };
}
