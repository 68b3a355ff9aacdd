import type { Kysely } from 'kysely';

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
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
