import { sql, type Kysely } from 'kysely';

/**
 * Verify (DECISIONS.md §14): at most one pending verification per service and number, held by a
 * unique partial index on both dialects. Two creates for the same number at once cannot both
 * insert one: the second's transaction (its message, its debit, its code) fails on the index and
 * is rolled back, and the create runs again as a send of the first one's code (refused within
 * 30 s of the first send, as any resend). A pending row past its expiry is expired before a new
 * one is made.
 *
 * Pending duplicates made before this index (two creates that raced) keep their newest; the
 * others are expired, their carrier texts removed.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const keep = sql`select max(id) from verifications where status = 'pending' group by service_id, recipient`;
  await sql`delete from verify_texts where verification_id in (select id from verifications where status = 'pending' and id not in (${keep}))`.execute(db);
  await sql`update verifications set status = 'expired' where status = 'pending' and id not in (${keep})`.execute(db);
  await db.schema.createIndex('verifications_one_pending').on('verifications').columns(['service_id', 'recipient']).unique().where(sql.ref('status'), '=', sql.lit('pending')).execute();
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
