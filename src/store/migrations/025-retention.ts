import { sql, type Kysely } from 'kysely';

/**
 * Retention and erasure (DECISIONS.md §13).
 *
 * - `accounts.retention_*_days`: the operator's shorter settings for one account; null follows
 *   the installation's RETENTION_* defaults.
 * - `daily_totals`: what purged messages counted, per account, UTC day, destination calling code
 *   and final status. A message is counted here in the transaction that deletes it, so live rows
 *   plus these totals always add up to every message ever accepted, at no cost to a send.
 * - `retention_cursors`: how far the text and number purges have gone through an account's
 *   messages and inbound messages (their rows stay, so a scan from the start would read them
 *   again on every run); `retention_deferred`: messages passed while not yet final, looked at
 *   again once they are.
 * - `erasures`: requests to erase a phone number, from the API (one account) or the operator
 *   (one account or the whole installation), kept as the operator's record with their counts.
 * - `messages_account_recipient`: an erasure finds an account's messages to a number by it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const column of ['retention_body_days', 'retention_message_days', 'retention_mask_days']) {
    await db.schema.alterTable('accounts').addColumn(column, 'integer').execute();
  }

  await db.schema
    .createTable('daily_totals')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('day', 'integer', (c) => c.notNull())
    .addColumn('country', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('messages', 'bigint', (c) => c.notNull())
    .addColumn('segments', 'bigint', (c) => c.notNull())
    .addColumn('credits', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('daily_totals_pk', ['account_id', 'day', 'country', 'status'])
    .execute();

  await db.schema
    .createTable('retention_cursors')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('id', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('retention_cursors_pk', ['account_id', 'kind'])
    .execute();

  await db.schema
    .createTable('retention_deferred')
    .addColumn('message_id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('erasures')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text')
    .addColumn('phone', 'text', (c) => c.notNull())
    .addColumn('requested_by', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('messages', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('inbound', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('events', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('responses', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('finished_at', 'bigint')
    .execute();
  await db.schema.createIndex('erasures_created').on('erasures').columns(['created_at', 'id']).execute();
  await db.schema.createIndex('erasures_pending').on('erasures').column('created_at').where(sql.ref('status'), '=', sql.lit('pending')).execute();

  await db.schema.createIndex('messages_account_recipient').on('messages').columns(['account_id', 'recipient']).execute();
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
