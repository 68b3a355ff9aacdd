import { sql, type Kysely } from 'kysely';

/**
 * E-mailed links (password reset, address verification) and the counters behind sign-up and
 * reset-mail limits. A link's token is stored only as its digest, like a session's. Owners that
 * exist before this migration signed up when addresses were not checked: they count as verified,
 * so that nobody loses what they could do yesterday.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('owners').addColumn('email_verified_at', 'bigint').execute();
  await sql`update owners set email_verified_at = created_at`.execute(db);

  await db.schema
    .createTable('owner_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('token_digest', 'text', (c) => c.notNull().unique())
    .addColumn('purpose', 'text', (c) => c.notNull())
    .addColumn('owner_id', 'text', (c) => c.notNull().references('owners.id'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .execute();
  await db.schema.createIndex('owner_tokens_owner').on('owner_tokens').columns(['owner_id', 'purpose']).execute();
  await db.schema.createIndex('owner_tokens_expires').on('owner_tokens').column('expires_at').execute();

  await db.schema
    .createTable('rate_counters')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('count', 'integer', (c) => c.notNull())
    .addColumn('window_started_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('rate_counters_window').on('rate_counters').column('window_started_at').execute();
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
