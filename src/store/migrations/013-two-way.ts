import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

/**
 * Two-way messaging (DECISIONS.md §8).
 *
 * - `numbers`: the phone numbers (E.164, or a short code of digits) the operator assigns to an
 *   account. A number belongs to at most one account: it is the primary key. An account may send
 *   from its numbers, so assigning or releasing one moves the access revision (migration 006),
 *   like a Sender ID change, and every process sees it at its next send.
 * - The scopes added with two-way messaging go to every existing key that holds all five original
 *   ones (a key created without a scope list had them all, and still has them all).
 */
const NEW_SCOPES = ['numbers:read', 'inbound:read', 'opt_outs:read', 'opt_outs:write', 'account:write'];
const ORIGINAL_SCOPES = ['sms:send', 'sender_ids:read', 'sender_ids:write', 'reports:read', 'account:read'];

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('numbers')
    .addColumn('number', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('label', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('numbers_account').on('numbers').columns(['account_id', 'created_at']).execute();

  const bump = 'update access_revision set value = value + 1 where id = 1';
  if (dialectOf(db) === 'postgres') {
    // pigeon_bump_access_revision() comes from migration 006.
    await sql
      .raw('create trigger numbers_access_revision after insert or delete or update of number, account_id on numbers for each statement execute function pigeon_bump_access_revision()')
      .execute(db);
  } else {
    for (const event of ['insert', 'delete', 'update of number, account_id']) {
      await sql.raw(`create trigger numbers_access_${event.split(' ')[0]} after ${event} on numbers begin ${bump}; end`).execute(db);
    }
  }

  const { rows } = await sql<{ id: string; scopes: string }>`select id, scopes from api_keys`.execute(db);
  for (const row of rows) {
    const held = new Set(row.scopes.split(','));
    if (!ORIGINAL_SCOPES.every((s) => held.has(s))) continue;
    const scopes = [...held, ...NEW_SCOPES.filter((s) => !held.has(s))].join(',');
    if (scopes !== row.scopes) await sql`update api_keys set scopes = ${scopes} where id = ${row.id}`.execute(db);
  }
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
