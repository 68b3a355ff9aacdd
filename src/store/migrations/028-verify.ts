import type { Kysely } from 'kysely';

/**
 * Verify: one-time codes and the fraud guard (DECISIONS.md §14).
 *
 * - `installation_secrets`: secrets of this installation made on first use and kept in the
 *   database, so every process of the installation shares them and a restore brings them back
 *   (`verify_code_key`: the HMAC key codes are stored under).
 * - `verify_services`, `verifications`: a code is stored only as `code_hash`, an HMAC-SHA256 of
 *   the verification id and the code; `checks_left` is decremented by one conditional UPDATE so
 *   parallel checks cannot evaluate more than `max_checks`.
 * - `verify_texts`: the text with the code, for the carrier only, from acceptance until the
 *   verification leaves `pending`; the message row holds the masked text.
 * - `verify_blocks`: a number range blocked by the conversion rule until `blocked_until`;
 *   `level` counts blocks of the range (12 h × 2^level).
 * - `verify_safe_list`: numbers and range prefixes rules 2-3 never refuse.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('installation_secrets')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('verify_services')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('sender', 'text', (c) => c.notNull())
    .addColumn('code_length', 'integer', (c) => c.notNull())
    .addColumn('lifetime_seconds', 'integer', (c) => c.notNull())
    .addColumn('max_checks', 'integer', (c) => c.notNull())
    .addColumn('max_sends', 'integer', (c) => c.notNull())
    .addColumn('allowed_countries', 'text')
    .addColumn('fraud_guard', 'text', (c) => c.notNull())
    .addColumn('template', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('deleted_at', 'bigint')
    .execute();
  await db.schema.createIndex('verify_services_account').on('verify_services').columns(['account_id', 'created_at']).execute();
  await db.schema
    .createTable('verifications')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('service_id', 'text', (c) => c.notNull())
    .addColumn('recipient', 'text', (c) => c.notNull())
    .addColumn('range_prefix', 'text', (c) => c.notNull())
    .addColumn('country', 'text')
    .addColumn('code_hash', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('sends', 'integer', (c) => c.notNull())
    .addColumn('checks_left', 'integer', (c) => c.notNull())
    .addColumn('message_id', 'text')
    .addColumn('credits_used', 'integer', (c) => c.notNull())
    .addColumn('last_sent_at', 'bigint')
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('verifications_service_recipient').on('verifications').columns(['service_id', 'recipient', 'created_at']).execute();
  await db.schema.createIndex('verifications_service_range').on('verifications').columns(['service_id', 'range_prefix', 'created_at']).execute();
  await db.schema.createIndex('verifications_account_range').on('verifications').columns(['account_id', 'range_prefix', 'created_at']).execute();
  await db.schema.createIndex('verifications_pending_expiry').on('verifications').columns(['status', 'expires_at']).execute();
  await db.schema
    .createTable('verify_texts')
    .addColumn('message_id', 'text', (c) => c.primaryKey())
    .addColumn('verification_id', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('verify_texts_verification').on('verify_texts').column('verification_id').execute();
  await db.schema
    .createTable('verify_blocks')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('range_prefix', 'text', (c) => c.notNull())
    .addColumn('level', 'integer', (c) => c.notNull())
    .addColumn('blocked_at', 'bigint', (c) => c.notNull())
    .addColumn('blocked_until', 'bigint', (c) => c.notNull())
    .addColumn('sent', 'integer', (c) => c.notNull())
    .addColumn('approved', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('verify_blocks_pk', ['account_id', 'range_prefix'])
    .execute();
  await db.schema
    .createTable('verify_safe_list')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('entry', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('verify_safe_list_pk', ['account_id', 'entry'])
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
