import { sql, type Kysely } from 'kysely';

/**
 * A dispatch job was written into two indexes on jobs besides its primary key: `jobs_queue_run_at`
 * (queue, run_at, id), from the first migration, and `jobs_queue_account` (queue, account_id,
 * run_at, id), from 015, which the dispatch claims walk by account and which counts each
 * account's backlog. Only the second serves dispatch; the first is now partial, holding only the
 * jobs without an account (receipts, webhook attempts, mail), which are exactly the queues that read
 * it. Every dispatch job has its account (enqueueJobs refuses one without), so each dispatch job
 * enqueued, claimed (a new row version: `run_at` is indexed) and released writes one B-tree
 * fewer. The queries on the jobs table name the condition of the index they use
 * (jobs.repository.ts, `ofQueue`), which both databases need to pick a partial index.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // A dispatch job without an account (one that 015 could not fill, its message gone) has
  // nothing to send, and no claim reaches it.
  await sql`delete from jobs where queue = 'dispatch' and account_id is null`.execute(db);
  await sql`update jobs set account_id = null where queue <> 'dispatch' and account_id is not null`.execute(db);
  await db.schema.dropIndex('jobs_queue_run_at').execute();
  await db.schema
    .createIndex('jobs_queue_run_at')
    .on('jobs')
    .columns(['queue', 'run_at', 'id'])
    .where(sql.ref('account_id'), 'is', null)
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
