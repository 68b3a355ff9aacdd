/**
 * The job queues (dispatch, receipts, webhook attempts, mail) are rows of one table in the same
 * database as the data they act on, so that enqueuing commits or rolls back with the change that
 * caused it (a transactional outbox).
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database, JobQueue, JobsTable } from '../database.ts';
import type { Executor } from '../connect.ts';
import { dialectOf, type DialectName } from '../dialect.ts';
import { newId } from '../../util/ids.ts';
import { chunked } from '../chunk.ts';
import { insertRows } from '../insert-rows.ts';

export interface NewJob {
  queue: JobQueue;
  /** The account a dispatch job sends for: dispatch serves accounts in turn. */
  accountId?: string;
  ref: string;
  payload?: unknown;
  runAt: number;
  /**
   * When the job joins the dispatch backlog (its `created_at`), when later than now: a held
   * marketing message's job joins it at its release, as a scheduled message's staged job does.
   */
  joinsBacklogAt?: number;
}

/**
 * Dispatch jobs, and only they, carry their account, and each queue is read through the index of
 * its kind: `jobs_queue_account` holds the dispatch jobs, `jobs_queue_run_at` the others (both
 * partial, migration 017). A query on the jobs of a queue adds this condition, which both
 * databases need before they use a partial index.
 */
export function ofQueue(queue: JobQueue) {
  return queue === 'dispatch' ? sql<boolean>`account_id is not null` : sql<boolean>`account_id is null`;
}

export async function enqueueJobs(db: Executor, jobs: NewJob[], now: number): Promise<void> {
  if (jobs.some((j) => (j.queue === 'dispatch') !== (j.accountId !== undefined))) throw new Error('a dispatch job, and only a dispatch job, names its account');
  const rows: JobsTable[] = jobs.map((j) => ({
    id: newId('job', now),
    queue: j.queue,
    account_id: j.accountId ?? null,
    ref: j.ref,
    payload: j.payload === undefined ? null : JSON.stringify(j.payload),
    run_at: j.runAt,
    attempts: 0,
    created_at: j.joinsBacklogAt ?? now,
  }));
  await insertRows(db, 'jobs', rows);
}

/**
 * Claims up to `limit` due jobs of a queue by moving their `run_at` forward by the lease. A claim
 * is a lease, not a lock held by a connection: if the worker dies, the job becomes due again when
 * the lease runs out and another worker takes it. On PostgreSQL, `FOR UPDATE SKIP LOCKED` lets
 * concurrent workers claim disjoint batches without waiting on each other; SQLite has one writer
 * at a time, so the plain subquery is already atomic there (and runs once).
 *
 * The dispatch queue is served by account in turn (`claimDispatchInTurn`); the others oldest first.
 */
export async function claimJobs(db: Kysely<Database>, queue: JobQueue, limit: number, now: number, leaseMs: number): Promise<JobsTable[]> {
  const dialect = dialectOf(db);
  if (queue === 'dispatch') return claimDispatchInTurn(db, dialect, limit, now, leaseMs);
  if (dialect === 'postgres') {
    // The due rows are locked and picked once, in a materialised CTE: written as `id IN (SELECT …
    // LIMIT n FOR UPDATE SKIP LOCKED)`, PostgreSQL may run the subquery again for every row (a
    // nested-loop semi join), each run skipping the rows just locked, and claim more than n.
    const { rows } = await sql<JobsTable>`
      with due as materialized (
        select id from jobs
        where queue = ${queue} and ${ofQueue(queue)} and run_at <= ${now}
        order by run_at, id
        limit ${limit}
        for update skip locked
      )
      update jobs set run_at = ${now + leaseMs}, attempts = jobs.attempts + 1
      from due
      where jobs.id = due.id
      returning jobs.*`.execute(db);
    return rows;
  }
  // Read first: an UPDATE takes SQLite's one write lock even when it changes nothing, and idle
  // loops polling their empty queues several times a second took it from the other process.
  const due = await db
    .selectFrom('jobs')
    .select('id')
    .where('queue', '=', queue)
    .where(ofQueue(queue))
    .where('run_at', '<=', now)
    .orderBy('run_at')
    .orderBy('id')
    .limit(limit)
    .execute();
  if (due.length === 0) return [];
  return db
    .updateTable('jobs')
    .set({ run_at: now + leaseMs, attempts: sql<number>`attempts + 1` })
    .where('id', 'in', due.map((r) => r.id))
    // Claimed meanwhile by another process: its run_at moved past now.
    .where('run_at', '<=', now)
    .returningAll()
    .execute();
}

/**
 * PostgreSQL only: locks up to `limit` due jobs of a queue for the caller's transaction, oldest
 * first, without writing them. For work done wholly inside that transaction (the receipts), this
 * replaces the lease: a claim that writes `run_at` is a new row version and new entries in both
 * of the table's indexes for every job, and a commit of its own. Concurrent transactions skip the
 * locked rows; if the process dies, PostgreSQL ends the transaction and the jobs are due again at
 * once. `attempts` is not moved: the caller counts this claim (see `retryJobsAt`).
 */
export async function lockDueJobs(trx: Transaction<Database>, queue: JobQueue, limit: number, now: number): Promise<JobsTable[]> {
  const { rows } = await sql<JobsTable>`
    select * from jobs
    where queue = ${queue} and ${ofQueue(queue)} and run_at <= ${now}
    order by run_at, id
    limit ${limit}
    for update skip locked`.execute(trx);
  return rows;
}

/**
 * Whether a queue has a job due, read without a transaction or a lock: an idle loop's poll is then
 * one statement where `lockDueJobs` needs three (BEGIN, the locking read, COMMIT). A due job
 * another transaction has locked counts too, which only costs that poll its transaction.
 */
export async function hasDueJob(db: Executor, queue: JobQueue, now: number): Promise<boolean> {
  const row = await db.selectFrom('jobs').select('id').where('queue', '=', queue).where(ofQueue(queue)).where('run_at', '<=', now).limit(1).executeTakeFirst();
  return row !== undefined;
}

/** Puts jobs claimed by `lockDueJobs` back for later, counting the claim as an attempt. */
export async function retryJobsAt(db: Executor, ids: string[], runAt: number): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable('jobs')
    .set({ run_at: runAt, attempts: sql<number>`attempts + 1` })
    .where('id', 'in', ids)
    .execute();
}

/**
 * A recursive CTE `accounts(account_id, n)` for `WITH RECURSIVE`: the accounts with dispatch jobs,
 * in id order after `after` (at most `max` of them, when given), found by a skip scan of
 * `jobs_queue_account` (one probe per account, however many jobs each has). Its last row has a
 * null account.
 */
export function dispatchAccountsWalk(after: string, max?: number) {
  const bound = max === undefined ? sql`` : sql`and a.n < ${max}`;
  return sql`accounts(account_id, n) as (
      select (select account_id from jobs where queue = 'dispatch' and account_id > ${after} order by account_id limit 1), 1
      union all
      select (select j.account_id from jobs j where j.queue = 'dispatch' and j.account_id > a.account_id order by j.account_id limit 1), a.n + 1
      from accounts a where a.account_id is not null ${bound}
    )`;
}

/** Accounts one dispatch claim looks at; with more waiting, the next claim starts after the last. */
export const ACCOUNTS_PER_CLAIM = 32;

/** Where the next dispatch claim starts its walk over accounts, per database (see below). */
const nextAccount = new WeakMap<object, string>();

/**
 * Dispatch claims serve accounts in turn rather than strictly oldest first: the first due job of
 * each account with work waiting, then the second of each, and so on (each account's own jobs
 * oldest first), so one account's campaign of 100,000 does not hold back another account's
 * single message. The accounts are found by a skip scan of the `jobs_queue_account` index (one
 * probe per account, however many jobs each has), at most ACCOUNTS_PER_CLAIM per claim; with
 * more, the next claim of this process continues after the last one seen, and wraps around.
 * On PostgreSQL this is one statement. Its reads do not lock, so concurrent claims (several loops,
 * several processes) read the same oldest jobs of an account: the rows are locked one by one in
 * turn order until the limit is reached (a nested loop over the ordered picks, each probing the
 * primary key; a join the planner could hash would read the whole table), skipping those another
 * claim holds or has just moved, and each account offers twice the limit, so that a claim running
 * beside another still fills its batch rather than coming back nearly empty (its loop would then
 * wait for the idle interval). SQLite, with no LATERAL, runs the same steps as separate
 * statements (no round trips there): the walk and the reads first, then an UPDATE that takes only
 * the jobs still due, so a job another loop claimed in between (its run_at moved past now) is
 * not claimed twice.
 */
async function claimDispatchInTurn(db: Kysely<Database>, dialect: DialectName, limit: number, now: number, leaseMs: number): Promise<JobsTable[]> {
  const key = db.getExecutor().adapter;
  const after = nextAccount.get(key) ?? '';
  const claimed = await claimDispatchAfter(db, dialect, key, after, limit, now, leaseMs);
  // A walk that began after the account remembered and reached the last one without filling the
  // batch goes on from the first: the accounts before it may have work waiting (without this, a
  // claim could come back empty while jobs are due, and its loop would wait for nothing).
  if (after !== '' && claimed.length < limit && !nextAccount.has(key)) {
    claimed.push(...(await claimDispatchAfter(db, dialect, key, '', limit - claimed.length, now, leaseMs)));
  }
  return claimed;
}

async function claimDispatchAfter(
  db: Kysely<Database>,
  dialect: DialectName,
  key: object,
  after: string,
  limit: number,
  now: number,
  leaseMs: number,
): Promise<JobsTable[]> {
  const accounts = dispatchAccountsWalk(after, ACCOUNTS_PER_CLAIM);
  const remember = (walk: string[], claimed: JobsTable[]) => {
    // Claims take the first job of each account in walk order, then the second, and so on. A
    // claim cut short in its first round continues next time after the last account it served;
    // a walk that reached its end starts again from the first account.
    if (claimed.length >= limit) {
      const served = new Set(claimed.map((j) => j.account_id));
      let last = -1;
      walk.forEach((a, i) => {
        if (served.has(a)) last = i;
      });
      if (last >= 0 && last < walk.length - 1) return void nextAccount.set(key, walk[last]!);
    }
    if (walk.length >= ACCOUNTS_PER_CLAIM) nextAccount.set(key, walk.at(-1)!);
    else nextAccount.delete(key);
  };
  if (dialect === 'postgres') {
    const { rows } = await sql<JobsTable & { walked: string[] | null }>`with recursive ${accounts},
      picked as (
        select d.id, d.run_at, a.n, row_number() over (partition by a.account_id order by d.run_at, d.id) as turn
        from accounts a cross join lateral (
          select j.id, j.run_at from jobs j
          where j.queue = 'dispatch' and j.account_id = a.account_id and j.run_at <= ${now}
          order by j.run_at, j.id limit ${2 * limit}
        ) d
        where a.account_id is not null
      ),
      claimed as (
        select l.id from (select id, turn, n from picked order by turn, n) p
        cross join lateral (select j.id from jobs j where j.id = p.id and j.run_at <= ${now} for update skip locked) l
        limit ${limit}
      ),
      updated as (
        update jobs set run_at = ${now + leaseMs}, attempts = attempts + 1
        where id in (select id from claimed)
        returning *
      )
      select u.*, null as walked from updated u
      union all
      select null, null, null, null, null, null, null, null, array(select account_id from accounts where account_id is not null order by n)`.execute(db);
    // The walk's row is the one without a job (UNION ALL does not promise an order).
    const claimed = rows.filter((r) => r.id !== null).map(({ walked: _, ...job }) => job as JobsTable);
    remember(rows.find((r) => r.id === null)?.walked ?? [], claimed);
    return claimed;
  }
  const { rows: found } = await sql<{ account_id: string }>`with recursive ${accounts} select account_id from accounts where account_id is not null order by n`.execute(db);
  if (found.length === 1) {
    // One account waiting (the usual case of a small installation): its jobs oldest first, in
    // one statement, as cheap as the plain claim.
    const due = db
      .selectFrom('jobs')
      .select('id')
      .where('queue', '=', 'dispatch')
      .where('account_id', '=', found[0]!.account_id)
      .where('run_at', '<=', now)
      .orderBy('run_at')
      .orderBy('id')
      .limit(limit);
    const claimed = await db
      .updateTable('jobs')
      .set({ run_at: now + leaseMs, attempts: sql<number>`attempts + 1` })
      .where('id', 'in', due)
      .returningAll()
      .execute();
    remember([found[0]!.account_id], claimed);
    return claimed;
  }
  const queues: string[][] = [];
  for (const { account_id } of found) {
    const due = await db
      .selectFrom('jobs')
      .select('id')
      .where('queue', '=', 'dispatch')
      .where('account_id', '=', account_id)
      .where('run_at', '<=', now)
      .orderBy('run_at')
      .orderBy('id')
      .limit(limit)
      .execute();
    if (due.length > 0) queues.push(due.map((r) => r.id));
  }
  const ids: string[] = [];
  for (let turn = 0; ids.length < limit && queues.some((q) => q.length > turn); turn++) {
    for (const q of queues) if (turn < q.length && ids.length < limit) ids.push(q[turn]!);
  }
  const claimed =
    ids.length === 0
      ? []
      : await db
          .updateTable('jobs')
          .set({ run_at: now + leaseMs, attempts: sql<number>`attempts + 1` })
          .where('id', 'in', ids)
          // Claimed meanwhile by another loop: its run_at moved past now.
          .where('run_at', '<=', now)
          .returningAll()
          .execute();
  remember(
    found.map((r) => r.account_id),
    claimed,
  );
  return claimed;
}

export async function deleteJobs(db: Executor, ids: string[]): Promise<void> {
  for (const part of chunked(ids, 1)) {
    await db.deleteFrom('jobs').where('id', 'in', part).execute();
  }
}

export async function rescheduleJob(db: Executor, id: string, runAt: number): Promise<void> {
  await db.updateTable('jobs').set({ run_at: runAt }).where('id', '=', id).execute();
}

/**
 * Puts a claimed dispatch job back until `at` and out of the dispatch backlog until then (its
 * `created_at`, as a staged job's): a marketing message held by quiet hours at dispatch.
 */
export async function holdJob(db: Executor, id: string, at: number): Promise<void> {
  await db.updateTable('jobs').set({ run_at: at, created_at: at }).where('id', '=', id).execute();
}

/** Moves the lease of claimed jobs to `until` (jobs already done and deleted are left alone). */
export async function extendLeases(db: Executor, ids: string[], until: number): Promise<void> {
  for (const part of chunked(ids, 1)) await db.updateTable('jobs').set({ run_at: until }).where('id', 'in', part).execute();
}

/**
 * Moves the lease of jobs still held by one claim (their `run_at` is still `heldUntil`, the lease
 * that claim or its last renewal wrote) to `until`. A job another worker took after the lease ran
 * out, or that its own batch has rescheduled or deleted meanwhile, is left as it is. On PostgreSQL
 * rows locked by a transaction (the batch's own recording) are skipped rather than waited for, so
 * a renewal never queues behind the commit it protects nor deadlocks with it.
 */
export async function renewLeases(db: Executor, ids: string[], heldUntil: number, until: number): Promise<number> {
  if (ids.length === 0) return 0;
  let renewed = 0;
  for (const part of chunked(ids, 1)) {
    if (dialectOf(db) === 'postgres') {
      const { numAffectedRows } = await sql`
        with held as materialized (
          select id from jobs where id in (${sql.join(part)}) and run_at = ${heldUntil} for update skip locked
        )
        update jobs set run_at = ${until} from held where jobs.id = held.id`.execute(db);
      renewed += Number(numAffectedRows ?? 0);
    } else {
      const result = await db.updateTable('jobs').set({ run_at: until }).where('id', 'in', part).where('run_at', '=', heldUntil).executeTakeFirst();
      renewed += Number(result.numUpdatedRows);
    }
  }
  return renewed;
}

/** Releases claimed jobs at once (graceful shutdown), so another worker need not wait out the lease. */
export async function releaseJobs(db: Executor, ids: string[], runAt: number): Promise<void> {
  if (ids.length === 0) return;
  await db.updateTable('jobs').set({ run_at: runAt }).where("id", "in", ids).execute();
}

/**
 * Puts claimed jobs back for later as if they had not been claimed (their claim is not counted as
 * an attempt): jobs that came due before the work they wait for could be done, such as a dispatch
 * job staged for a scheduled message not yet released. Not counted, they do not look like
 * submits in flight either (`oldestDispatchClaim` in carrier-receipts.repository.ts).
 */
export async function deferJobs(db: Executor, ids: string[], runAt: number): Promise<void> {
  for (const part of chunked(ids, 1)) {
    await db
      .updateTable('jobs')
      .set({ run_at: runAt, attempts: sql<number>`attempts - 1` })
      .where('id', 'in', part)
      .execute();
  }
}

/**
 * A queue's jobs waiting or in progress at `now`, and the oldest one's creation. Jobs created in
 * the future are not counted: a dispatch job staged for a scheduled message is created at its
 * `send_at` (scheduled-messages.repository.ts), and joins the backlog then.
 */
export async function queueDepth(db: Executor, queue: JobQueue, now: number): Promise<{ depth: number; oldestCreatedAt: number | null }> {
  const row = await db
    .selectFrom('jobs')
    .select((eb) => [eb.fn.countAll<number>().as('depth'), eb.fn.min('created_at').as('oldest')])
    .where('queue', '=', queue)
    .where(ofQueue(queue))
    .where('created_at', '<=', now)
    .executeTakeFirstOrThrow();
  return { depth: Number(row.depth), oldestCreatedAt: row.oldest === null ? null : Number(row.oldest) };
}

export interface DispatchBacklog {
  /** Dispatch jobs waiting or in progress (of one account, or of all). */
  depth: number;
  /** How many of them were created at or before `since`: what is left of an earlier reading. */
  createdBy: number;
  oldestCreatedAt: number | null;
}

/**
 * The dispatch backlog at `now`, of one account (through `jobs_queue_account`) or of all, with how
 * many of its jobs already existed at `since`: a reading taken then, minus this count, is what
 * dispatch worked off in between, whichever process did it (src/services/messages/backlog.ts).
 * Jobs created after `now` (staged for scheduled messages, see `queueDepth`) are not in it yet.
 */
export async function dispatchBacklog(db: Executor, now: number, since: number, accountId?: string): Promise<DispatchBacklog> {
  return backlogOf(await dispatchBacklogQuery(db, now, since, accountId).executeTakeFirstOrThrow());
}

/**
 * The query of `dispatchBacklog`, for a caller that runs it elsewhere (readRows: on a reader
 * thread of a SQLite file), with `backlogOf` to read its one row. It counts every waiting job:
 * during a flood, tens of thousands, milliseconds of SQLite work.
 */
export function dispatchBacklogQuery(db: Executor, now: number, since: number, accountId?: string) {
  let q = db
    .selectFrom('jobs')
    .select((eb) => [
      eb.fn.countAll<number>().as('depth'),
      eb.fn.sum<number>(eb.case().when('created_at', '<=', since).then(1).else(0).end()).as('created_by'),
      eb.fn.min('created_at').as('oldest'),
    ])
    .where('queue', '=', 'dispatch')
    .where(ofQueue('dispatch'))
    .where('created_at', '<=', now);
  if (accountId !== undefined) q = q.where('account_id', '=', accountId);
  return q;
}

export function backlogOf(row: { depth: number | string; created_by: number | string | null; oldest: number | string | null } | undefined): DispatchBacklog {
  if (!row) throw new Error('the backlog query returned no row');
  return { depth: Number(row.depth), createdBy: Number(row.created_by ?? 0), oldestCreatedAt: row.oldest === null ? null : Number(row.oldest) };
}

/**
 * The accounts with messages waiting for dispatch at `now`: the `each` with the most waiting and
 * the `each` whose oldest message has waited longest (at most twice `each` accounts, however many
 * have a backlog), largest first. The second half finds a small account whose message has been
 * held up, which a list of the largest would hide.
 */
export async function dispatchBacklogByAccount(db: Executor, now: number, each: number): Promise<{ accountId: string; depth: number; oldestCreatedAt: number }[]> {
  const rows = await db
    .with('per_account', (qb) =>
      qb
        .selectFrom('jobs')
        .select((eb) => ['account_id', eb.fn.countAll<number>().as('depth'), eb.fn.min('created_at').as('oldest')])
        .where('queue', '=', 'dispatch')
        .where(ofQueue('dispatch'))
        .where('created_at', '<=', now)
        .groupBy('account_id'),
    )
    .with('ranked', (qb) =>
      qb
        .selectFrom('per_account')
        .select((eb) => [
          'account_id',
          'depth',
          'oldest',
          eb.fn.agg<number>('row_number').over((o) => o.orderBy('depth', 'desc').orderBy('account_id')).as('by_depth'),
          eb.fn.agg<number>('row_number').over((o) => o.orderBy('oldest').orderBy('account_id')).as('by_age'),
        ]),
    )
    .selectFrom('ranked')
    .select(['account_id', 'depth', 'oldest'])
    .where((eb) => eb.or([eb('by_depth', '<=', each), eb('by_age', '<=', each)]))
    .orderBy('depth', 'desc')
    .orderBy('oldest')
    .orderBy('account_id')
    .execute();
  return rows.map((r) => ({ accountId: r.account_id!, depth: Number(r.depth), oldestCreatedAt: Number(r.oldest) }));
}
