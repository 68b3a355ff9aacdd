/**
 * Scheduled messages (DECISIONS.md §8): the scheduler's release of due messages, the dispatch jobs
 * staged ahead of it, and the cancels.
 * Claiming is the jobs table's pattern (jobs.repository.ts)
 * applied to the messages themselves: the status guard in the UPDATE is the claim, the dispatch
 * job is enqueued in the same transaction, so a message is released exactly once whatever
 * crashes or races; on PostgreSQL `FOR UPDATE SKIP LOCKED` lets several schedulers release
 * disjoint batches without waiting on each other.
 *
 * A message's dispatch job has one id, derived from the message's (`jobrel_…`), so it exists at
 * most once whoever writes it: the scheduler stages it shortly before the message is due
 * (`stageDispatch`, the job waiting with `run_at` = `created_at` = `send_at`), and the release
 * writes it only if it is not there yet. The release, the part of the work that is late if slow,
 * then writes only the message. A staged job whose message is still `scheduled` when it comes due
 * is put back by dispatch until the release; one whose message was canceled or refused is taken
 * back with it.
 */
import { sql } from 'kysely';
import type { Executor } from '../connect.ts';
import { insertRows } from '../insert-rows.ts';
import type { MessagesTable } from '../database.ts';
import { dialectOf } from '../dialect.ts';
import { chunked } from '../chunk.ts';

/** What the send-time checks (src/services/messages/send-time-checks.ts) need of a released message. */
export type ReleasedMessage = Pick<MessagesTable, 'id' | 'account_id' | 'sender' | 'recipient' | 'send_at' | 'charged'>;

/** A released message's dispatch job id: one release per message, so one such job. */
const releaseJobId = (messageId: string) => `jobrel_${messageId}`;

/** A scheduled message's place in the release order: due time, then id. */
export interface DueKey {
  sendAt: number;
  id: string;
}

/** A slice of the release order: after `after` (exclusive), up to `upTo` (inclusive); open where absent. */
export interface DueRange {
  after?: DueKey;
  upTo?: DueKey;
}

/**
 * Where the due messages split into slices of `size`, for releases that run side by side: the
 * key of every `size`-th message due by `now`, in release order, at most `slices` of them. Each
 * release then takes its own slice (`DueRange`), so that concurrent releases neither wait on nor
 * step over each other's rows. It reads the first `size × slices` entries of the due index.
 */
export async function dueSliceBounds(db: Executor, now: number, size: number, slices: number): Promise<DueKey[]> {
  const { rows } = await sql<{ send_at: number | string; id: string }>`
    select send_at, id from (
      select send_at, id, row_number() over (order by send_at, id) as n
      from (
        select send_at, id from messages
        where status = 'scheduled' and send_at <= ${now}
        order by send_at, id
        limit ${size * slices}
      ) d
    ) numbered
    where n % ${size} = 0
    order by n`.execute(db);
  return rows.map((r) => ({ sendAt: Number(r.send_at), id: r.id }));
}

/**
 * Releases up to `limit` scheduled messages due by `now`, earliest due first (within `range`, when
 * given): moves them to `pending` and enqueues their dispatch jobs, in the caller's transaction.
 * Returns what the release-time checks need of each (see `withdrawDispatch` for the ones they
 * refuse). The due messages are found in the partial index of scheduled messages by due time
 * (migration 014), so the cost is that of the rows moved.
 */
export async function releaseDueMessages(trx: Executor, now: number, limit: number, range: DueRange = {}): Promise<ReleasedMessage[]> {
  const rows = dialectOf(trx) === 'postgres' ? await releasePostgres(trx, now, limit, range) : await releaseSqlite(trx, now, limit, range);
  // RETURNING gives no order: the caller gets them in due order, as they were picked.
  return rows
    .map((r) => ({ id: r.id, account_id: r.account_id, sender: r.sender, recipient: r.recipient, send_at: r.send_at === null ? null : Number(r.send_at), charged: Number(r.charged ?? 1) }))
    .sort((a, b) => Number(a.send_at) - Number(b.send_at) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** The range's bounds as conditions on the due index's key (row values: both databases seek the index with them). */
function inRange(range: DueRange) {
  const after = range.after ? sql`and (send_at, id) > (${range.after.sendAt}, ${range.after.id})` : sql``;
  const upTo = range.upTo ? sql`and (send_at, id) <= (${range.upTo.sendAt}, ${range.upTo.id})` : sql``;
  return sql`${after} ${upTo}`;
}

/**
 * One statement: the due rows are locked and picked once in a materialised CTE, moved, and their
 * jobs inserted from the moved rows, with no round trip of the rows through the process. (Written
 * as `id IN (SELECT … LIMIT n FOR UPDATE SKIP LOCKED)`, PostgreSQL may plan a nested-loop semi
 * join that runs the subquery again for every row, each run skipping the rows just moved and
 * picking the next ones: the LIMIT would no longer bound the release.)
 */
async function releasePostgres(trx: Executor, now: number, limit: number, range: DueRange): Promise<ReleasedMessage[]> {
  // The due rows are read in index order, never as a bitmap then sorted. The planner estimates how
  // many messages are scheduled from statistics that lag a large campaign (100,000 scheduled
  // within the hour are a small change for a table of millions, and ANALYZE waits for 10 %); for
  // a few hundred it would pick a bitmap scan, which reads and sorts every due message, spilling
  // to disk, for each batch of 5,000: a quadratic release. Turned off for this statement only.
  await sql`set local enable_bitmapscan = off`.execute(trx);
  const { rows } = await sql<ReleasedMessage>`
    with due as materialized (
      select id from messages
      where status = 'scheduled' and send_at <= ${now} ${inRange(range)}
      order by send_at, id
      limit ${limit}
      for update skip locked
    ), moved as (
      update messages set status = 'pending', updated_at = ${now}
      from due
      where messages.id = due.id and messages.status = 'scheduled'
      returning messages.id, messages.account_id, messages.sender, messages.recipient, messages.send_at, messages.charged
    ), queued as (
      insert into jobs (id, queue, account_id, ref, payload, run_at, attempts, created_at)
      select 'jobrel_' || id, 'dispatch', account_id, id, null, ${now}, 0, ${now} from moved
      on conflict (id) do nothing
    )
    select id, account_id, sender, recipient, send_at, charged from moved`.execute(trx);
  await sql`reset enable_bitmapscan`.execute(trx);
  return rows;
}

/** SQLite has one writer and runs an uncorrelated IN subquery once: the claim is atomic. */
async function releaseSqlite(trx: Executor, now: number, limit: number, range: DueRange): Promise<ReleasedMessage[]> {
  const due = trx
    .selectFrom('messages')
    .select('id')
    .where('status', '=', 'scheduled')
    .where('send_at', '<=', now)
    .where(sql<boolean>`true ${inRange(range)}`)
    .orderBy('send_at')
    .orderBy('id')
    .limit(limit);
  const moved = await trx
    .updateTable('messages')
    .set({ status: 'pending', updated_at: now })
    .where('id', 'in', due)
    .where('status', '=', 'scheduled')
    .returning(['id', 'account_id', 'sender', 'recipient', 'send_at', 'charged'])
    .execute();
  await insertRows(
    trx,
    'jobs',
    moved.map((m) => ({ id: releaseJobId(m.id), queue: 'dispatch', account_id: m.account_id, ref: m.id, payload: null, run_at: now, attempts: 0, created_at: now })),
    { skipExisting: true },
  );
  return moved;
}

/**
 * Stages the dispatch jobs of up to `limit` scheduled messages due after `from` and by `until`,
 * in due order after `after` (the last one staged before, when known): each job waits for its
 * message's `send_at`, which is also its `created_at`, the time it joins the dispatch backlog
 * (backlog counts leave out jobs created in the future). Jobs already there are left as they are.
 * Returns how many messages were looked at, and the last one's key.
 */
export async function stageDispatch(trx: Executor, from: number, until: number, after: DueKey | undefined, limit: number): Promise<{ looked: number; last: DueKey | null }> {
  if (dialectOf(trx) === 'postgres') {
    // One statement, the rows never travel through the process; in index order, as the release
    // reads them (see releasePostgres).
    await sql`set local enable_bitmapscan = off`.execute(trx);
    const { rows } = await sql<{ looked: number | string; send_at: number | string; id: string }>`
      with picked as materialized (
        select id, account_id, send_at from messages
        where status = 'scheduled' and send_at > ${from} and send_at <= ${until} ${inRange({ after })}
        order by send_at, id
        limit ${limit}
      ), staged as (
        insert into jobs (id, queue, account_id, ref, payload, run_at, attempts, created_at)
        select 'jobrel_' || id, 'dispatch', account_id, id, null, send_at, 0, send_at from picked
        on conflict (id) do nothing
      )
      select (select count(*) from picked) as looked, send_at, id from picked
      order by send_at desc, id desc
      limit 1`.execute(trx);
    await sql`reset enable_bitmapscan`.execute(trx);
    const last = rows[0];
    return last ? { looked: Number(last.looked), last: { sendAt: Number(last.send_at), id: last.id } } : { looked: 0, last: null };
  }
  const upcoming = await trx
    .selectFrom('messages')
    .select(['id', 'account_id', 'send_at'])
    .where('status', '=', 'scheduled')
    .where('send_at', '>', from)
    .where('send_at', '<=', until)
    .where(sql<boolean>`true ${inRange({ after })}`)
    .orderBy('send_at')
    .orderBy('id')
    .limit(limit)
    .execute();
  await insertRows(
    trx,
    'jobs',
    upcoming.map((m) => ({ id: releaseJobId(m.id), queue: 'dispatch', account_id: m.account_id, ref: m.id, payload: null, run_at: Number(m.send_at), attempts: 0, created_at: Number(m.send_at) })),
    { skipExisting: true },
  );
  const last = upcoming.at(-1);
  return { looked: upcoming.length, last: last ? { sendAt: Number(last.send_at), id: last.id } : null };
}

/** Takes back the dispatch jobs of messages that will not be dispatched (refused at release, or canceled), staged or not. */
export async function withdrawDispatch(trx: Executor, messageIds: string[]): Promise<void> {
  for (const part of chunked(messageIds, 1)) {
    await trx.deleteFrom('jobs').where('id', 'in', part.map(releaseJobId)).execute();
  }
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
 * the credits charged for them), in id order. The status guard makes a cancel and a release of the same message
 * exclusive: whichever commits first wins, the other changes nothing.
 */
export async function cancelScheduledMessages(trx: Executor, accountId: string, target: CancelTarget, now: number): Promise<{ id: string; credits: number }[]> {
  let q = trx.updateTable('messages').set({ status: 'canceled', updated_at: now }).where('account_id', '=', accountId).where('status', '=', 'scheduled');
  q = 'messageId' in target ? q.where('id', '=', target.messageId) : q.where('batch_id', '=', target.batchId);
  const rows = await q.returning(['id', 'segments', 'credits']).execute();
  // Messages accepted before prices (credits null) were charged one credit per segment.
  return rows.map((r) => ({ id: r.id, credits: Number(r.credits ?? r.segments) })).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
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
