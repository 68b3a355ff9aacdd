/**
 * Sender IDs and their verification documents (src/services/sender-ids/sender-ids.ts, documents.ts). The
 * operator's review queue is in review-queue.repository.ts, the quota counts in
 * account-limits.repository.ts.
 */
import type { Executor, Store } from '../connect.ts';
import type { SenderIdDocumentsTable, SenderIdsTable, SenderIdStatus } from '../database.ts';
import { preparedRead } from '../prepared-statements.ts';
import { chunked } from '../chunk.ts';

export type SenderIdRow = SenderIdsTable;
export type SenderIdDocumentRow = SenderIdDocumentsTable;
export type SenderIdDocumentInfo = Omit<SenderIdDocumentsTable, 'content'>;

/** What a send needs to know of the Sender ID it names. */
export interface SenderAccessRow {
  name: string;
  status: string;
}

export async function insertSenderId(db: Executor, row: SenderIdRow): Promise<void> {
  await db.insertInto('sender_ids').values(row).execute();
}

/** Newest first; every filter given narrows the list. */
export async function listSenderIdRows(db: Executor, filter: { accountId?: string; status?: SenderIdStatus } = {}): Promise<SenderIdRow[]> {
  let q = db.selectFrom('sender_ids').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc');
  if (filter.accountId) q = q.where('account_id', '=', filter.accountId);
  if (filter.status) q = q.where('status', '=', filter.status);
  return q.execute();
}

export async function senderIdById(db: Executor, id: string, accountId?: string): Promise<SenderIdRow | undefined> {
  let q = db.selectFrom('sender_ids').selectAll().where('id', '=', id);
  if (accountId) q = q.where('account_id', '=', accountId);
  return q.executeTakeFirst();
}

/** Records a review decision; false when there is no such Sender ID. */
/** Records a review decision; false when no row changed (no such id, or it already had `unlessStatus`). */
export async function setSenderIdReview(db: Executor, id: string, status: SenderIdStatus, note: string | null, now: number, unlessStatus?: SenderIdStatus): Promise<boolean> {
  let update = db.updateTable('sender_ids').set({ status, review_note: note, updated_at: now }).where('id', '=', id);
  if (unlessStatus) update = update.where('status', '<>', unlessStatus);
  const result = await update.executeTakeFirst();
  return result.numUpdatedRows !== 0n;
}

const senderQuery = (db: Executor, accountId: string, nameKey: string) =>
  db.selectFrom('sender_ids').select(['name', 'status']).where('account_id', '=', accountId).where('name_key', '=', nameKey);

/** The account's Sender ID with this name key, on the read connection (prepared). */
export const senderAccessByKey: (store: Store, accountId: string, nameKey: string) => Promise<SenderAccessRow | undefined> = preparedRead(senderQuery);

/** The same, read in the caller's transaction. */
export function senderAccessInTransaction(db: Executor, accountId: string, nameKey: string): Promise<SenderAccessRow | undefined> {
  return senderQuery(db, accountId, nameKey).executeTakeFirst();
}

/** Which of `nameKeys` (upper-cased names) are the account's approved Sender IDs. */
export async function approvedSenderKeysAmong(db: Executor, accountId: string, nameKeys: readonly string[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (const part of chunked([...new Set(nameKeys)], 1)) {
    const rows = await db.selectFrom('sender_ids').select('name_key').where('account_id', '=', accountId).where('status', '=', 'approved').where('name_key', 'in', part).execute();
    for (const r of rows) out.add(r.name_key);
  }
  return out;
}

/** One row per statement: each may be megabytes. */
export async function insertDocuments(db: Executor, rows: SenderIdDocumentRow[]): Promise<void> {
  for (const row of rows) await db.insertInto('sender_id_documents').values(row).execute();
}

/** The documents of some Sender IDs, without their bytes, oldest first. */
export async function documentsOfSenderIds(db: Executor, senderIdIds: string[]): Promise<SenderIdDocumentInfo[]> {
  if (senderIdIds.length === 0) return [];
  return db
    .selectFrom('sender_id_documents')
    .select(['id', 'sender_id_id', 'account_id', 'filename', 'content_type', 'size', 'created_at'])
    .where('sender_id_id', 'in', senderIdIds)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** One document with its bytes (a Buffer on both dialects); `accountId` restricts it to that account. */
export async function documentById(db: Executor, id: string, accountId?: string): Promise<SenderIdDocumentRow | undefined> {
  let q = db.selectFrom('sender_id_documents').selectAll().where('id', '=', id);
  if (accountId) q = q.where('account_id', '=', accountId);
  const row = await q.executeTakeFirst();
  return row && { ...row, content: Buffer.from(row.content) };
}
