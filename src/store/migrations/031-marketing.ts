import type { Kysely } from 'kysely';

/**
 * Marketing traffic (DECISIONS.md §16): `messages.category` is `marketing` for a message sent as
 * marketing and null for a transactional one, so that every row written before this migration,
 * and every transactional send (which keeps the one-statement acceptance path), reads as the
 * default without a rewrite of the table.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('messages').addColumn('category', 'text').execute();
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
