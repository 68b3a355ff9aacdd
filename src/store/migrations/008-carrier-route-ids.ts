import type { Kysely } from 'kysely';

/**
 * How each carrier route's SMSC spells message ids in its receipts, learned from the receipts
 * themselves: `same` as in its submit answers, or converted to the other base. Stored so that a
 * restart does not have to learn it again (docs/smpp.md, "Receipts").
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('carrier_routes')
    .addColumn('route', 'text', (c) => c.primaryKey())
    .addColumn('receipt_ids', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
