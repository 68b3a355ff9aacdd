import type { Kysely } from 'kysely';

/**
 * Verify's fraud guard counts, for every new verification, those made in the last hour to the
 * number and to its range, and those sent to the range in the last day with how many were
 * approved, all leaving out blocked ones (DECISIONS.md §14). The indexes of migration 028 ended at
 * `created_at`, so each counted verification was read from the table for its status: 30 table
 * reads for a range at the velocity limit, more for a day's conversion. With `status` as the
 * indexes' last column the counts read the index alone.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const [name, columns] of [
    ['verifications_service_recipient', ['service_id', 'recipient', 'created_at', 'status']],
    ['verifications_service_range', ['service_id', 'range_prefix', 'created_at', 'status']],
    ['verifications_account_range', ['account_id', 'range_prefix', 'created_at', 'status']],
  ] as const) {
    await db.schema.dropIndex(name).execute();
    await db.schema.createIndex(name).on('verifications').columns([...columns]).execute();
  }
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
