import { sql, type Kysely } from 'kysely';

/**
 * Campaigns sent from the dashboard's composer, and the owner's time zone.
 *
 * A campaign is one composer form: its rows become one or more batches (a bulk holds at most
 * `BULK_MAX_MESSAGES`), each batch pointing to the campaign. `form_key` is the random key the
 * composer form carries: unique per account, so a reload or a double click of the same form finds
 * the campaign it already made instead of making another. `time_zone` on the owner is the IANA
 * zone the composer reads local dates and times in (null until the owner first schedules; the
 * browser's zone is offered meanwhile).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('campaigns')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('form_key', 'text', (c) => c.notNull())
    .addColumn('sender', 'text', (c) => c.notNull())
    .addColumn('template', 'text', (c) => c.notNull())
    .addColumn('file_rows', 'integer', (c) => c.notNull())
    .addColumn('invalid_rows', 'integer', (c) => c.notNull())
    .addColumn('messages', 'integer', (c) => c.notNull())
    .addColumn('credits', 'integer', (c) => c.notNull())
    .addColumn('send_at', 'bigint')
    .addColumn('time_zone', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('campaigns_form_key').unique().on('campaigns').columns(['account_id', 'form_key']).execute();
  await db.schema.createIndex('campaigns_account_created').on('campaigns').columns(['account_id', 'created_at', 'id']).execute();
  await db.schema.alterTable('batches').addColumn('campaign_id', 'text').execute();
  await db.schema
    .createIndex('batches_campaign')
    .on('batches')
    .columns(['campaign_id', 'id'])
    .where(sql.ref('campaign_id'), 'is not', null)
    .execute();
  await db.schema.alterTable('owners').addColumn('time_zone', 'text').execute();
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
