/**
 * The job queues (dispatch, receipts, webhook attempts, mail) are rows of one table in the same
 * database as the data they act on, so that enqueuing commits or rolls back with the change that
 * caused it (a transactional outbox).
 */
import { sql, type Kysely } from 'kysely';
import type { Database, JobQueue, JobsTable } from '../database.ts';
import type { Executor } from '../connect.ts';
import { dialectOf } from '../dialect.ts';
import { newId } from '../../util/ids.ts';
import { chunked } from '../chunk.ts';
import { insertRows } from '../insert-rows.ts';

export interface NewJob {
  queue: JobQueue;
  ref: string;
  payload?: unknown;
  runAt: number;
}

export async function enqueueJobs(db: Executor, jobs: NewJob[], now: number): Promise<void> {
  const rows: JobsTable[] = jobs.map((j) => ({
    id: newId('job', now),
    queue: j.queue,
    ref: j.ref,
    payload: j.payload === undefined ? null : JSON.stringify(j.payload),
    run_at: j.runAt,
    attempts: 0,
    created_at: now,
  }));
  await insertRows(db, 'jobs', rows);
}

/**
 * Claims up to `limit` due jobs of a queue by moving their `run_at` forward by the lease. A claim
 * is a lease, not a lock held by a connection: if the worker dies, the job becomes due again when
 * the lease runs out and another worker takes it. On PostgreSQL, `FOR UPDATE SKIP LOCKED` lets
 * concurrent workers claim disjoint batches without waiting on each other; SQLite has one writer
 * at a time, so the plain subquery is already atomic there.
 */
export async function claimJobs(db: Kysely<Database>, queue: JobQueue, limit: number, now: number, leaseMs: number): Promise<JobsTable[]> {
  const dialect = dialectOf(db);
  const due = db
    .selectFrom('jobs')
    .select('id')
    .where('queue', '=', queue)
    .where('run_at', '<=', now)
    .orderBy('run_at')
    .orderBy('id')
    .limit(limit)
    .$if(dialect === 'postgres', (qb) => qb.forUpdate().skipLocked());
  return db
    .updateTable('jobs')
    .set({ run_at: now + leaseMs, attempts: sql<number>`attempts + 1` })
    .where('id', 'in', due)
    .returningAll()
    .execute();
}

export async function deleteJobs(db: Executor, ids: string[]): Promise<void> {
  for (const part of chunked(ids, 1)) {
    await db.deleteFrom('jobs').where('id', 'in', part).execute();
  }
}

export async function rescheduleJob(db: Executor, id: string, runAt: number): Promise<void> {
  await db.updateTable('jobs').set({ run_at: runAt }).where('id', '=', id).execute();
}

/** Releases claimed jobs at once (graceful shutdown), so another worker need not wait out the lease. */
export async function releaseJobs(db: Executor, ids: string[], runAt: number): Promise<void> {
  if (ids.length === 0) return;
  await db.updateTable('jobs').set({ run_at: runAt }).where("id", "in", ids).execute();
}

export async function queueDepth(db: Executor, queue: JobQueue): Promise<{ depth: number; oldestCreatedAt: number | null }> {
  const row = await db
    .selectFrom('jobs')
    .select((eb) => [eb.fn.countAll<number>().as('depth'), eb.fn.min('created_at').as('oldest')])
    .where('queue', '=', queue)
    .executeTakeFirstOrThrow();
  return { depth: Number(row.depth), oldestCreatedAt: row.oldest === null ? null : Number(row.oldest) };
}
