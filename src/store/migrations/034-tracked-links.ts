import type { Kysely } from 'kysely';

/**
 * Tracked links (DECISIONS.md §16).
 *
 * - `links`: one row per link of a message sent with `track_links`, written in the message's
 *   transaction. `code` is the primary key: the redirect reads exactly this row. `clicks` counts
 *   people's clicks, `bot_clicks` the fetches of previews, crawlers, scanners and HEAD requests;
 *   `first_clicked_at` is the first counted click. Deleted with its message by retention.
 * - `link_clicks`: the time and user agent of a link's first clicks (no address), `bot` 1 for a
 *   fetch not counted; bounded per link (links.ts).
 * - `campaigns.track_links`: 1 when the campaign's messages had their links tracked.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('links')
    .addColumn('code', 'text', (c) => c.primaryKey())
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('batch_id', 'text')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('clicks', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('bot_clicks', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('first_clicked_at', 'bigint')
    .execute();
  await db.schema.createIndex('links_message').on('links').columns(['message_id']).execute();
  await db.schema.createIndex('links_batch').on('links').columns(['batch_id']).where('batch_id', 'is not', null).execute();
  await db.schema
    .createTable('link_clicks')
    .addColumn('code', 'text', (c) => c.notNull())
    .addColumn('clicked_at', 'bigint', (c) => c.notNull())
    .addColumn('user_agent', 'text')
    .addColumn('bot', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('link_clicks_code').on('link_clicks').columns(['code', 'clicked_at']).execute();
  await db.schema.alterTable('campaigns').addColumn('track_links', 'integer', (c) => c.notNull().defaultTo(0)).execute();
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
