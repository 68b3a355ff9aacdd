import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

/**
 * Prices per destination (DECISIONS.md §11).
 *
 * - `rate_cards`: named cards. `default` exists from the start and holds `+ → 1`, so an
 *   installation that never touches prices charges one credit per segment as before.
 * - `rate_card_entries`: one row per (card, prefix, effective_from). `kind` is `price` (with
 *   `credits_per_segment`), `blocked`, or `removed`: a prefix taken off the card from
 *   `effective_from` on, so that a removal can be dated in the future like any other change.
 * - `rate_card_revision`: one counter moved in the transaction of every change to a card or to an
 *   account's card, so each process can keep its cards in memory and know when to read them again
 *   (src/services/pricing/price-cache.ts).
 * - `accounts.rate_card`: the account's card; null is `default`.
 * - `messages.credits`: what the message was charged at acceptance (segments × its price), the
 *   one figure its refund, its cancel and its reports use. Null on messages accepted before
 *   this migration: they were charged one credit per segment (none for a free `charged` 0 one).
 *
 * PostgreSQL: `pigeon_accept` (migration 015) is created again with the messages' credits.
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
  m_send_at bigint[], m_validity_period integer[], m_expires_at bigint[], m_credits integer[],
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
                        send_at, validity_period, expires_at, credits)
    select t.id, t.account_id, t.batch_id, t.recipient, t.sender, t.body, t.encoding, t.segments, t.status, t.callback_url,
           null, null, null, t.created_at, null, null, t.updated_at, t.send_at, t.validity_period, t.expires_at, t.credits
    from unnest(m_id, m_account_id, m_batch_id, m_recipient, m_sender, m_body, m_encoding, m_segments, m_status, m_callback_url,
                m_created_at, m_updated_at, m_send_at, m_validity_period, m_expires_at, m_credits)
      as t(id, account_id, batch_id, recipient, sender, body, encoding, segments, status, callback_url, created_at, updated_at,
           send_at, validity_period, expires_at, credits);
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

const OLD_ACCEPT = 'pigeon_accept(bigint, integer, bigint, text[], bigint[], integer[], text[], text[], bigint[], text[], text[], text[], integer[], integer[], bigint[], text[], text[], text[], text[], text[], text[], text[], integer[], text[], text[], bigint[], bigint[], bigint[], integer[], bigint[], text[])';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('rate_cards')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('rate_card_entries')
    .addColumn('card', 'text', (c) => c.notNull().references('rate_cards.name'))
    .addColumn('prefix', 'text', (c) => c.notNull())
    .addColumn('effective_from', 'bigint', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('credits_per_segment', 'integer')
    .addPrimaryKeyConstraint('rate_card_entries_pk', ['card', 'prefix', 'effective_from'])
    .execute();
  await db.schema
    .createTable('rate_card_revision')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('value', 'bigint', (c) => c.notNull())
    .execute();
  await sql`insert into rate_card_revision (id, value) values (1, 0)`.execute(db);
  await sql`insert into rate_cards (name, created_at, updated_at) values ('default', 0, 0)`.execute(db);
  await sql`insert into rate_card_entries (card, prefix, effective_from, kind, credits_per_segment) values ('default', '+', 0, 'price', 1)`.execute(db);
  await db.schema.alterTable('accounts').addColumn('rate_card', 'text').execute();
  await db.schema.alterTable('messages').addColumn('credits', 'integer').execute();
  if (dialectOf(db) !== 'postgres') return;
  await sql.raw(`drop function ${OLD_ACCEPT}`).execute(db);
  await sql.raw(ACCEPT).execute(db);
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
