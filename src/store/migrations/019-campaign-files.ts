import type { Kysely } from 'kysely';

/**
 * Campaigns from the files people have: contact exports with any phone column, national numbers, repeats.
 *
 * - `campaigns.name`: what the owner calls the campaign (by default the file's name and the
 *   date); null for the campaigns made before, which are shown by their id.
 * - `campaigns.duplicate_rows`: rows skipped because an earlier row of the file had the same
 *   number (sent once per number unless the owner asked for every row), so that the campaign
 *   page still accounts for every row of the file.
 * - `campaigns.opt_out_line`: 1 when "Reply STOP to opt out" was added to each message.
 * - `campaign_defaults`: per account, what the composer remembers for the next file: the default
 *   country national numbers are read in, and the recipient column last used.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('campaigns').addColumn('name', 'text').execute();
  await db.schema
    .alterTable('campaigns')
    .addColumn('duplicate_rows', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('campaigns')
    .addColumn('opt_out_line', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createTable('campaign_defaults')
    .addColumn('account_id', 'text', (c) => c.primaryKey().references('accounts.id'))
    .addColumn('country', 'text')
    .addColumn('recipient_column', 'text')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
