import { sql, type Kysely } from 'kysely';

/**
 * Scheduled sends and validity periods (DECISIONS.md §8). A scheduled message is stored at
 * acceptance with status `scheduled` and its `send_at`; the scheduler finds the due ones through
 * a partial index that holds only scheduled messages, ordered by due time, so a release reads
 * exactly the rows it moves whatever the size of the table. `expires_at` (send time plus the
 * message's validity period) is indexed only where it is set, by status, for the expiry sweep.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('messages').addColumn('send_at', 'bigint').execute();
  await db.schema.alterTable('messages').addColumn('validity_period', 'integer').execute();
  await db.schema.alterTable('messages').addColumn('expires_at', 'bigint').execute();
  await db.schema
    .createIndex('messages_scheduled_due')
    .on('messages')
    .columns(['send_at', 'id'])
    .where(sql.ref('status'), '=', sql.lit('scheduled'))
    .execute();
  await db.schema
    .createIndex('messages_expiring')
    .on('messages')
    .columns(['status', 'expires_at'])
    .where(sql.ref('expires_at'), 'is not', null)
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
