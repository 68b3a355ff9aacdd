import { sql, type Kysely } from 'kysely';

/**
 * Redacting an inbound message (DECISIONS.md §13) rewrites the stored payloads of the events it
 * raised (`sms.received`, and the opt-out a keyword caused): found by `inbound_id`, which had no
 * index. Partial: delivery events, most of the table, have none.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('webhook_events_inbound').on('webhook_events').column('inbound_id').where(sql.ref('inbound_id'), 'is not', null).execute();
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
