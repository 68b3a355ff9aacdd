import type { Kysely } from 'kysely';

/**
 * The one-time nonce of the dashboard's "Generate New Key" form, per session: the SHA-256 of the
 * nonce the last rendered form carries, and of the last one used. A reloaded page posts the used
 * nonce again and creates nothing; the key itself is never stored, not even in the session.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('sessions').addColumn('key_form_nonce', 'text').execute();
  await db.schema.alterTable('sessions').addColumn('key_form_used', 'text').execute();
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
