import type { Kysely } from 'kysely';

/**
 * Members of an account and two-factor sign-in.
 *
 * Every person who signs in to an account's dashboard is a row of `owners` (the table keeps its
 * name: the one who signed up was its only kind of row); `role` is one of owner, developer,
 * billing, viewer, and every row made before this migration becomes `owner`, so existing accounts
 * keep working unchanged. `member_invitations` holds the e-mailed invitations (the digest of the
 * link's token, never the token). Two-factor: the TOTP secret and the last time step accepted (a
 * code is not accepted twice) sit on the person, owners and operators alike; `recovery_codes`
 * keeps the digests of their single-use recovery codes. A session opened by the password alone,
 * of a person with two-factor, is `pending` ('code') until the code is given.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('owners').addColumn('role', 'text', (c) => c.notNull().defaultTo('owner')).execute();
  for (const table of ['owners', 'operators']) {
    await db.schema.alterTable(table).addColumn('totp_secret', 'text').execute();
    await db.schema.alterTable(table).addColumn('totp_enabled_at', 'bigint').execute();
    await db.schema.alterTable(table).addColumn('totp_last_step', 'bigint').execute();
  }
  await db.schema.alterTable('accounts').addColumn('require_2fa', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('sessions').addColumn('pending', 'text').execute();

  await db.schema
    .createTable('member_invitations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('token_digest', 'text', (c) => c.notNull().unique())
    .addColumn('invited_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .execute();
  await db.schema.createIndex('member_invitations_account').on('member_invitations').columns(['account_id', 'expires_at']).execute();

  await db.schema
    .createTable('recovery_codes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('subject_kind', 'text', (c) => c.notNull())
    .addColumn('subject_id', 'text', (c) => c.notNull())
    .addColumn('code_digest', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .execute();
  await db.schema.createIndex('recovery_codes_subject').on('recovery_codes').columns(['subject_kind', 'subject_id', 'code_digest']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('recovery_codes').execute();
  await db.schema.dropTable('member_invitations').execute();
  await db.schema.alterTable('sessions').dropColumn('pending').execute();
  await db.schema.alterTable('accounts').dropColumn('require_2fa').execute();
  for (const table of ['owners', 'operators']) {
    await db.schema.alterTable(table).dropColumn('totp_last_step').execute();
    await db.schema.alterTable(table).dropColumn('totp_enabled_at').execute();
    await db.schema.alterTable(table).dropColumn('totp_secret').execute();
  }
  await db.schema.alterTable('owners').dropColumn('role').execute();
}
