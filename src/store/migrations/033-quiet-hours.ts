import type { Kysely } from 'kysely';

/**
 * Quiet hours (DECISIONS.md §16). `accounts.quiet_hours_start` and `quiet_hours_end` are the
 * account's sending window in minutes after local midnight (null: the default 08:00-20:00).
 * `messages.held_until` is when a held marketing message's window next opens (ms; null: not held),
 * what its send result and its report show; its dispatch job is due then plus its spread offset.
 * `campaigns.category` is a campaign's category (null: transactional, as `messages.category`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('accounts').addColumn('quiet_hours_start', 'integer').execute();
  await db.schema.alterTable('accounts').addColumn('quiet_hours_end', 'integer').execute();
  await db.schema.alterTable('messages').addColumn('held_until', 'bigint').execute();
  await db.schema.alterTable('campaigns').addColumn('category', 'text').execute();
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
