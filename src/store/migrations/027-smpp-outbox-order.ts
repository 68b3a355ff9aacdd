import type { Kysely } from 'kysely';

/**
 * The SMPP outbox is taken oldest first among the rows that are due. Indexed by
 * (system_id, next_at, created_at), every take read all of a user's due rows and sorted them, so
 * with tens of thousands waiting a take of ten cost milliseconds and deliveries to a bound ESME
 * fell to a thousand a second. Indexed by (system_id, created_at, id), a take walks the user's
 * rows in their order and stops after the first due ones, passing over only those held (in flight
 * or backing off).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('smpp_outbox_user_next').execute();
  await db.schema.createIndex('smpp_outbox_user_created').on('smpp_outbox').columns(['system_id', 'created_at', 'id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('smpp_outbox_user_created').execute();
  await db.schema.createIndex('smpp_outbox_user_next').on('smpp_outbox').columns(['system_id', 'next_at', 'created_at']).execute();
}
