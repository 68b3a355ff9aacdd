/** The operator's review queue: Sender IDs waiting for review, oldest first, a page at a time. */
import type { Executor } from '../connect.ts';
import type { AccountsTable, SenderIdsTable } from '../database.ts';

/** One page of pending Sender IDs, in the order they arrived (served by the sender_ids_status index). */
export async function pendingSenderIdsPage(db: Executor, limit: number, offset: number): Promise<SenderIdsTable[]> {
  return db
    .selectFrom('sender_ids')
    .selectAll()
    .where('status', '=', 'pending')
    .orderBy('created_at', 'asc')
    .orderBy('id', 'asc')
    .limit(limit)
    .offset(offset)
    .execute();
}

export async function countAllPendingSenderIds(db: Executor): Promise<number> {
  const row = await db
    .selectFrom('sender_ids')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('status', '=', 'pending')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Names and e-mails of some accounts (those on one page of the queue). */
export async function accountNames(db: Executor, ids: string[]): Promise<Pick<AccountsTable, 'id' | 'name' | 'email'>[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('accounts').select(['id', 'name', 'email']).where('id', 'in', ids).execute();
}
