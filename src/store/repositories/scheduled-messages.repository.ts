/**
 * Scheduled messages (DECISIONS.md §8): the scheduler's release of due messages, the cancels, and
 * what the release-time checks read. Claiming is the jobs table's pattern (jobs.repository.ts)
 * applied to the messages themselves: the status guard in the UPDATE is the claim, the dispatch
 * job is enqueued in the same transaction, so a message is released exactly once whatever
 * crashes or races; on PostgreSQL `FOR UPDATE SKIP LOCKED` lets several schedulers release
 * disjoint batches without waiting on each other.
 */
import type { Executor } from '../connect.ts';
import type { AccountStatus, MessagesTable } from '../database.ts';
import { dialectOf } from '../dialect.ts';
import { chunked } from '../chunk.ts';

/**
 * Moves up to `limit` scheduled messages due by `now` (oldest due first) to `pending` and returns
 * them as they are after the move. Must run in the transaction that enqueues their dispatch.
 * The due messages are found in the partial index of scheduled messages by due time
 * (migration 014), so the cost is that of the rows moved.
 */
export async function releaseDueMessages(trx: Executor, now: number, limit: number): Promise<MessagesTable[]> {
  const rows = await releaseQuery(trx, now, limit);
  // RETURNING gives no order: the caller gets them in due order, as they were picked.
  return rows.sort((a, b) => Number(a.send_at) - Number(b.send_at) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

function releaseQuery(trx: Executor, now: number, limit: number): Promise<MessagesTable[]> {
  if (dialectOf(trx) === 'postgres') {
    // The due rows are locked and picked once, in a materialised CTE. Written as
    // `id IN (SELECT … LIMIT n FOR UPDATE SKIP LOCKED)`, PostgreSQL may plan a nested-loop semi
    // join that runs the subquery again for every row, each run skipping the rows just moved and
    // picking the next ones: the LIMIT would no longer bound the release.
    return trx
      .with(
        (wb) => wb('due').materialized(),
        (db) =>
          db
            .selectFrom('messages')
            .select('id')
            .where('status', '=', 'scheduled')
            .where('send_at', '<=', now)
            .orderBy('send_at')
            .orderBy('id')
            .limit(limit)
            .forUpdate()
            .skipLocked(),
      )
      .updateTable('messages')
      .from('due')
      .set({ status: 'pending', updated_at: now })
      .whereRef('messages.id', '=', 'due.id')
      .where('messages.status', '=', 'scheduled')
      .returningAll('messages')
      .execute();
  }
  // SQLite runs an uncorrelated IN subquery once, and has one writer: the claim is atomic.
  const due = trx
    .selectFrom('messages')
    .select('id')
    .where('status', '=', 'scheduled')
    .where('send_at', '<=', now)
    .orderBy('send_at')
    .orderBy('id')
    .limit(limit);
  return trx.updateTable('messages').set({ status: 'pending', updated_at: now }).where('id', 'in', due).where('status', '=', 'scheduled').returningAll().execute();
}

/** When the next scheduled message is due, or null when none is scheduled. */
export async function nextSendAt(db: Executor): Promise<number | null> {
  const row = await db
    .selectFrom('messages')
    .select('send_at')
    .where('status', '=', 'scheduled')
    .where('send_at', 'is not', null)
    .orderBy('send_at')
    .limit(1)
    .executeTakeFirst();
  return row?.send_at == null ? null : Number(row.send_at);
}

/** How many messages are still scheduled (metrics, the benchmark). */
export async function countScheduled(db: Executor): Promise<number> {
  const row = await db
    .selectFrom('messages')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('status', '=', 'scheduled')
    .where('send_at', 'is not', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export type CancelTarget = { messageId: string } | { batchId: string };

/**
 * Moves the target's still-scheduled messages of the account to `canceled`; returns them (id and
 * segments), in id order. The status guard makes a cancel and a release of the same message
 * exclusive: whichever commits first wins, the other changes nothing.
 */
export async function cancelScheduledMessages(trx: Executor, accountId: string, target: CancelTarget, now: number): Promise<{ id: string; segments: number }[]> {
  let q = trx.updateTable('messages').set({ status: 'canceled', updated_at: now }).where('account_id', '=', accountId).where('status', '=', 'scheduled');
  q = 'messageId' in target ? q.where('id', '=', target.messageId) : q.where('batch_id', '=', target.batchId);
  const rows = await q.returning(['id', 'segments']).execute();
  return rows.map((r) => ({ id: r.id, segments: Number(r.segments) })).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** Whether the account has a batch with this id. */
export async function accountHasBatch(db: Executor, accountId: string, batchId: string): Promise<boolean> {
  const row = await db.selectFrom('batches').select('id').where('id', '=', batchId).where('account_id', '=', accountId).executeTakeFirst();
  return row !== undefined;
}

/** Whether the account has a message with this id. */
export async function accountHasMessage(db: Executor, accountId: string, messageId: string): Promise<boolean> {
  const row = await db.selectFrom('messages').select('id').where('id', '=', messageId).where('account_id', '=', accountId).executeTakeFirst();
  return row !== undefined;
}

/** The status of each of these accounts (release-time checks). */
export async function accountStatuses(db: Executor, accountIds: string[]): Promise<Map<string, AccountStatus>> {
  const out = new Map<string, AccountStatus>();
  for (const part of chunked(accountIds, 1)) {
    const rows = await db.selectFrom('accounts').select(['id', 'status']).where('id', 'in', part).execute();
    for (const r of rows) out.set(r.id, r.status);
  }
  return out;
}

/**
 * The upper-cased names of the approved Sender IDs of these accounts, as `account_id` NUL
 * `name_key` (release-time checks).
 */
export async function approvedSenderKeys(db: Executor, accountIds: string[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (const part of chunked(accountIds, 1)) {
    const rows = await db
      .selectFrom('sender_ids')
      .select(['account_id', 'name_key'])
      .where('account_id', 'in', part)
      .where('status', '=', 'approved')
      .execute();
    for (const r of rows) out.add(`${r.account_id}\u0000${r.name_key}`);
  }
  return out;
}
