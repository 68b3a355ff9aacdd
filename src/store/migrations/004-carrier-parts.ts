import type { Kysely } from 'kysely';

/**
 * The SMSC id of every submitted part (SMPP), so a receipt for any part of a multi-part message
 * finds it, whichever way the SMSC spells the id; and an index for the expiry sweep of `sent`.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('carrier_parts')
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('part_index', 'integer', (c) => c.notNull())
    .addColumn('carrier_id', 'text', (c) => c.notNull())
    .addColumn('part_key', 'text', (c) => c.notNull())
    .addColumn('part_alt', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('carrier_parts_pk', ['message_id', 'part_index'])
    .execute();
  await db.schema.createIndex('carrier_parts_key').on('carrier_parts').column('part_key').execute();
  await db.schema.createIndex('carrier_parts_alt').on('carrier_parts').column('part_alt').execute();
  await db.schema.createIndex('messages_status_sent').on('messages').columns(['status', 'sent_at']).execute();
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
