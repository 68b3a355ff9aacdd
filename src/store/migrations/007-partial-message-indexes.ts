import { sql, type Kysely } from 'kysely';

/**
 * Four of the message indexes only ever serve rows that a new message does not have yet, or never
 * has: a single send has no batch, and a message has no carrier id and is not `sent` when it is
 * accepted. As partial indexes they skip those rows, so accepting a single send writes four
 * B-trees fewer (acceptance is the hottest write of all). Every query that uses them compares the
 * column (`batch_id = ?`, `carrier_message_id IN (...)`, `status = 'sent'`), which both databases
 * read as implying the index's condition.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const name of ['messages_account_batch', 'messages_account_batch_status', 'messages_carrier_id', 'messages_status_sent']) {
    await db.schema.dropIndex(name).execute();
  }
  await db.schema
    .createIndex('messages_account_batch')
    .on('messages')
    .columns(['account_id', 'batch_id', 'created_at', 'id'])
    .where(sql.ref('batch_id'), 'is not', null)
    .execute();
  await db.schema
    .createIndex('messages_account_batch_status')
    .on('messages')
    .columns(['account_id', 'batch_id', 'status', 'created_at', 'id'])
    .where(sql.ref('batch_id'), 'is not', null)
    .execute();
  await db.schema.createIndex('messages_carrier_id').on('messages').column('carrier_message_id').where(sql.ref('carrier_message_id'), 'is not', null).execute();
  await db.schema.createIndex('messages_status_sent').on('messages').column('sent_at').where(sql.ref('status'), '=', sql.lit('sent')).execute();
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
