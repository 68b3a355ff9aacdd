import { sql, type Kysely } from 'kysely';

/**
 * The fraud guard's velocity rule (a service's verifications in the last hour to the number and to
 * its range) and its conversion rule (the account's to the range in the last day) read the same
 * entries: the account's range over the day holds the service's range and number over the hour.
 * With `service_id` and `recipient` as the last columns of the account's range index, one scan of
 * it answers all three, and the service's number and range indexes go: every verification written
 * updates two indexes fewer (the number's was one whose entries land anywhere in it, each a page
 * of its own to write at commit), and every create reads two fewer. The one read by number that
 * remains outside a create, a Twilio check's last verification to the number, scans the number's
 * range (`latestVerification`).
 *
 * The expiry sweep's index was (status, expires_at), and a lookup of a number's pending
 * verification (`status = 'pending'`, the service and the number) could take it instead of the
 * partial index of migration 032: PostgreSQL did, in plans made for named statements while the
 * table had no statistics (a new installation, or autovacuum off), and every lookup then read every
 * pending verification (thousands of index entries each; creates a second cut by three). It is
 * now partial too, over `expires_at`, and its condition names `expires_at is not null`, which the
 * sweep's `expires_at <= ?` implies and a lookup by number does not: only the sweep can use it.
 * A verification that leaves `pending` now leaves this index, where its entry used to move in it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('verifications_service_recipient').execute();
  await db.schema.dropIndex('verifications_service_range').execute();
  await db.schema.dropIndex('verifications_account_range').execute();
  await db.schema
    .createIndex('verifications_account_range')
    .on('verifications')
    .columns(['account_id', 'range_prefix', 'created_at', 'status', 'service_id', 'recipient'])
    .execute();
  await db.schema.dropIndex('verifications_pending_expiry').execute();
  await db.schema.createIndex('verifications_pending_expiry').on('verifications').column('expires_at').where(sql<boolean>`status = 'pending' and expires_at is not null`).execute();
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
