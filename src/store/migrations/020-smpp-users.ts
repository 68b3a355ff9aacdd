import type { Kysely } from 'kysely';

/**
 * SMPP access for customers (DECISIONS.md §10).
 *
 * - `smpp_users`: an account's credentials for binding. `system_id` is unique in the installation
 *   (the primary key); the password is stored as a scrypt hash like owners' passwords; `allow` is
 *   a comma-separated list of CIDR ranges (empty: any address); `rotated_at` says when the password
 *   was last replaced. A process holding binds compares the hash they proved with the stored one,
 *   so a rotation ends them.
 * - `smpp_binds`: the live binds of every process, refreshed while they last (`seen_at`), so that
 *   the CLI and the dashboard, which hold no sockets, can list them.
 * - `smpp_messages`: what a message accepted over SMPP needs for its receipts: the user it came
 *   from, every part's id, what `registered_delivery` asked and the addresses to swap.
 * - `smpp_outbox`: the `deliver_sm` (receipts, inbound messages) waiting for one of the user's
 *   receiver binds, kept until answered or until `expires_at`. `seq` orders them per user.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('smpp_users')
    .addColumn('system_id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('tps', 'integer', (c) => c.notNull())
    .addColumn('max_binds', 'integer', (c) => c.notNull())
    .addColumn('allow', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('rotated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('smpp_users_account').on('smpp_users').columns(['account_id', 'created_at']).execute();

  await db.schema
    .createTable('smpp_binds')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('system_id', 'text', (c) => c.notNull())
    .addColumn('bind_type', 'text', (c) => c.notNull())
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('since', 'bigint', (c) => c.notNull())
    .addColumn('submits', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('seen_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('smpp_binds_user').on('smpp_binds').columns(['system_id', 'since']).execute();

  await db.schema
    .createTable('smpp_messages')
    .addColumn('message_id', 'text', (c) => c.primaryKey())
    .addColumn('system_id', 'text', (c) => c.notNull())
    .addColumn('part_ids', 'text', (c) => c.notNull())
    .addColumn('registered_delivery', 'integer', (c) => c.notNull())
    .addColumn('source_addr', 'text', (c) => c.notNull())
    .addColumn('source_ton', 'integer', (c) => c.notNull())
    .addColumn('destination_addr', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('smpp_outbox')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('system_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('message_id', 'text')
    .addColumn('pdu', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('smpp_outbox_user_next').on('smpp_outbox').columns(['system_id', 'next_at', 'created_at']).execute();
  await db.schema.createIndex('smpp_outbox_expires').on('smpp_outbox').columns(['expires_at']).execute();
}
