import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

/**
 * Both dialects: `jobs.account_id`, the account a dispatch job sends for, filled in for the
 * dispatch jobs already waiting, and an index on (queue, account_id, run_at, id) for the rows that
 * have one: dispatch claims serve accounts in turn through it (jobs.repository.ts), and each
 * account's share of the backlog is counted on it (src/services/messages/backlog.ts).
 *
 * PostgreSQL only: `pigeon_accept`, a group of acceptances (src/services/messages/acceptance-batcher.ts)
 * written by one statement, so in one round trip and one implicit transaction: the access
 * revision read; the ledger rows, the batches, the messages and the dispatch jobs of those not scheduled, inserted from
 * arrays (one parameter per column, whatever the number of rows); then one debit per account (in
 * id order, each guarded by the balance and the daily cap exactly as `tryDebitWithinDailyLimit`).
 *
 * It writes nothing and returns a null `balances` when an acceptance was granted under an older
 * access revision than the one it reads (the caller then re-checks access in the general path),
 * and raises SQLSTATE PGN01 when a debit is refused: the statement, and so every debit already
 * made in it, is rolled back, and the caller takes the general path, which refuses acceptances
 * one by one. SQLite runs in the process, where a statement costs no round trip: it keeps the
 * general path.
 */
const ACCEPT = `
create function pigeon_accept(
  granted_revision bigint,
  today integer,
  now_ms bigint,
  debit_accounts text[], debit_credits bigint[], debit_messages integer[],
  ledger_ids text[], ledger_accounts text[], ledger_amounts bigint[], ledger_references text[],
  batch_ids text[], batch_accounts text[], batch_totals integer[], batch_queued integer[], batch_credits bigint[],
  m_id text[], m_account_id text[], m_batch_id text[], m_recipient text[], m_sender text[], m_body text[],
  m_encoding text[], m_segments integer[], m_status text[], m_callback_url text[], m_created_at bigint[], m_updated_at bigint[],
  m_send_at bigint[], m_validity_period integer[], m_expires_at bigint[],
  job_ids text[]
) returns table (revision bigint, balances bigint[])
language plpgsql as $$
declare
  current_revision bigint;
  after bigint;
  result bigint[] := '{}';
begin
  select value into current_revision from access_revision where id = 1;
  if granted_revision is not null and current_revision > granted_revision then
    return query select current_revision, null::bigint[];
    return;
  end if;
  insert into credit_ledger (id, account_id, amount, kind, reference, note, created_at)
    select t.id, t.account_id, t.amount, 'debit', t.reference, null, now_ms
    from unnest(ledger_ids, ledger_accounts, ledger_amounts, ledger_references) as t(id, account_id, amount, reference);
  insert into batches (id, account_id, total, queued, credits_used, created_at)
    select t.id, t.account_id, t.total, t.queued, t.credits_used, now_ms
    from unnest(batch_ids, batch_accounts, batch_totals, batch_queued, batch_credits) as t(id, account_id, total, queued, credits_used);
  insert into messages (id, account_id, batch_id, recipient, sender, body, encoding, segments, status, callback_url,
                        carrier_message_id, error_code, error_message, created_at, sent_at, delivered_at, updated_at,
                        send_at, validity_period, expires_at)
    select t.id, t.account_id, t.batch_id, t.recipient, t.sender, t.body, t.encoding, t.segments, t.status, t.callback_url,
           null, null, null, t.created_at, null, null, t.updated_at, t.send_at, t.validity_period, t.expires_at
    from unnest(m_id, m_account_id, m_batch_id, m_recipient, m_sender, m_body, m_encoding, m_segments, m_status, m_callback_url,
                m_created_at, m_updated_at, m_send_at, m_validity_period, m_expires_at)
      as t(id, account_id, batch_id, recipient, sender, body, encoding, segments, status, callback_url, created_at, updated_at,
           send_at, validity_period, expires_at);
  -- Scheduled messages get no dispatch job: the scheduler enqueues it when it releases them.
  insert into jobs (id, queue, account_id, ref, payload, run_at, attempts, created_at)
    select t.id, 'dispatch', t.account_id, t.ref, null, now_ms, 0, now_ms
    from unnest(job_ids, m_id, m_account_id, m_status) as t(id, ref, account_id, status)
    where t.status = 'pending';
  -- The debits come last: an account's row stays locked until the commit, so every
  -- concurrent group for the same account waits only for this UPDATE and the commit, not for
  -- the inserts (their foreign-key checks take KEY SHARE locks, which the UPDATE's lock does
  -- not conflict with, so the order cannot deadlock).
  for i in 1 .. coalesce(array_length(debit_accounts, 1), 0) loop
    update accounts set
      credits = credits - debit_credits[i],
      daily_count = (case when daily_day = today then daily_count else 0 end) + debit_messages[i],
      daily_day = today
    where id = debit_accounts[i]
      and credits >= debit_credits[i]
      and (daily_message_limit is null or (case when daily_day = today then daily_count else 0 end) + debit_messages[i] <= daily_message_limit)
    returning credits into after;
    if not found then
      raise exception 'debit refused for %', debit_accounts[i] using errcode = 'PGN01';
    end if;
    result := result || after;
  end loop;
  return query select current_revision, result;
end
$$`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('jobs').addColumn('account_id', 'text').execute();
  await sql`update jobs set account_id = (select m.account_id from messages m where m.id = jobs.ref) where queue = 'dispatch'`.execute(db);
  await db.schema
    .createIndex('jobs_queue_account')
    .on('jobs')
    .columns(['queue', 'account_id', 'run_at', 'id'])
    .where(sql.ref('account_id'), 'is not', null)
    .execute();
  if (dialectOf(db) !== 'postgres') return;
  await sql.raw(ACCEPT).execute(db);
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
