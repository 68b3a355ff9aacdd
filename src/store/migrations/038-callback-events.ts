import type { Kysely } from 'kysely';

/**
 * The delivery events a message's `callback_url` asked for (`callback_events` on a send or a
 * bulk): null for every one, so that every row written before this migration, and every send that
 * names none (which keeps the one-statement acceptance path), reads as the default without a
 * rewrite of the table; else the names, comma-separated.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('messages').addColumn('callback_events', 'text').execute();
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
