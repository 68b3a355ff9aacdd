import type { Kysely } from 'kysely';

/** How many lockouts in a row a login key has had: each one lasts twice as long as the last. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('login_throttle').addColumn('lockouts', 'integer', (c) => c.notNull().defaultTo(0)).execute();
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
