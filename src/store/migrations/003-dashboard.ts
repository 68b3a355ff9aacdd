import { sql, type Kysely, type RawBuilder } from 'kysely';
import { dialectOf } from '../dialect.ts';

/**
 * The one dialect-specific column type of the schema: uploaded document bytes live in the
 * database (so that every process sees them), as `blob` on SQLite and `bytea` on PostgreSQL.
 */
function binaryType(db: Kysely<unknown>): RawBuilder<unknown> {
  return dialectOf(db) === 'postgres' ? sql`bytea` : sql`blob`;
}

/** The web dashboard: owners' logins, sessions, login throttling, Sender ID documents, mail. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('owners')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('email', 'text', (c) => c.notNull().unique())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('owners_account').on('owners').column('account_id').execute();

  await db.schema
    .createTable('sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('token_digest', 'text', (c) => c.notNull().unique())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('subject_id', 'text', (c) => c.notNull())
    .addColumn('csrf_token', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sessions_subject').on('sessions').columns(['kind', 'subject_id']).execute();
  await db.schema.createIndex('sessions_expires').on('sessions').column('expires_at').execute();

  await db.schema
    .createTable('login_throttle')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('failures', 'integer', (c) => c.notNull())
    .addColumn('window_started_at', 'bigint', (c) => c.notNull())
    .addColumn('locked_until', 'bigint')
    .execute();

  await db.schema
    .createTable('sender_id_documents')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('sender_id_id', 'text', (c) => c.notNull().references('sender_ids.id'))
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('filename', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('size', 'integer', (c) => c.notNull())
    .addColumn('content', binaryType(db), (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sender_id_documents_sender').on('sender_id_documents').column('sender_id_id').execute();

  await db.schema
    .createTable('mail_outbox')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('to_address', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('body_text', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('sent_at', 'bigint')
    .execute();
  await db.schema.createIndex('mail_outbox_created').on('mail_outbox').columns(['created_at', 'id']).execute();
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
