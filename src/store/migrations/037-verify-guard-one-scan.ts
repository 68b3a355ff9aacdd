import type { Kysely } from 'kysely';

/**
 * The fraud guard's per-range velocity (a service's verifications to a range in the last hour) and
 * its conversion rule (the account's to the range in the last day) read the same entries: the
 * account's range over the day holds the service's over the hour. With `service_id` as the last
 * column of the account's range index, one scan of it answers both, and the service's range index
 * goes: every verification written updates one index fewer, and every create reads one fewer.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('verifications_service_range').execute();
  await db.schema.dropIndex('verifications_account_range').execute();
  await db.schema.createIndex('verifications_account_range').on('verifications').columns(['account_id', 'range_prefix', 'created_at', 'status', 'service_id']).execute();
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
