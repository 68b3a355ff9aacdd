import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

/**
 * Limits per account (docs/security.md, "Quotas and fraud limits"):
 * - `pending_sender_id_limit`, `document_quota_bytes`: null follows the installation's setting
 *   (SENDER_ID_PENDING_MAX, DOCUMENT_QUOTA_BYTES), a number overrides it for this account.
 * - `daily_message_limit`: null is no cap; accounts made by dashboard sign-up start with
 *   NEW_ACCOUNT_DAILY_LIMIT. `daily_count` counts the messages accepted on the UTC day
 *   `daily_day` (days since 1970-01-01), written by the same UPDATE that debits the credits.
 * - `allowed_countries`: comma-separated calling codes that narrow ALLOWED_COUNTRIES, or null.
 * - `origin`: `operator` (CLI, console) or `signup` (the dashboard's sign-up form).
 *
 * Sends cache an account's allowed countries per access revision (src/services/auth/access-cache.ts),
 * so changing them moves the revision, like a key or a Sender ID change.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('accounts').addColumn('origin', 'text', (c) => c.notNull().defaultTo('operator')).execute();
  await db.schema.alterTable('accounts').addColumn('pending_sender_id_limit', 'integer').execute();
  await db.schema.alterTable('accounts').addColumn('document_quota_bytes', 'bigint').execute();
  await db.schema.alterTable('accounts').addColumn('daily_message_limit', 'integer').execute();
  await db.schema.alterTable('accounts').addColumn('daily_count', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('accounts').addColumn('daily_day', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('accounts').addColumn('allowed_countries', 'text').execute();
  // The document quota sums an account's documents; the pending count is served by the
  // (account_id, name_key) unique index of sender_ids.
  await db.schema.createIndex('sender_id_documents_account').on('sender_id_documents').column('account_id').execute();

  const bump = 'update access_revision set value = value + 1 where id = 1';
  if (dialectOf(db) === 'postgres') {
    // pigeon_bump_access_revision() comes from migration 006.
    await sql
      .raw('create trigger accounts_limits_access_revision after update of allowed_countries on accounts for each statement execute function pigeon_bump_access_revision()')
      .execute(db);
    return;
  }
  await sql.raw(`create trigger accounts_access_allowed_countries after update of allowed_countries on accounts begin ${bump}; end`).execute(db);
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
