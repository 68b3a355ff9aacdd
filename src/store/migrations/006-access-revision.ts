import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

/**
 * One counter that every change to what authorises a send moves: a key revoked, deleted or given
 * other scopes, an account suspended or restored, a Sender ID registered, reviewed or removed.
 * Triggers move it in the transaction of the change itself, whichever process or code path makes
 * it (the API, the dashboard, the CLI, a later feature), so the per-process lookup cache
 * (src/services/auth/access-cache.ts) can trust an entry exactly as long as the counter stands still.
 */
const WATCHED: { table: string; events: string[] }[] = [
  { table: 'api_keys', events: ['delete', 'update of revoked_at, scopes, digest, account_id'] },
  { table: 'accounts', events: ['delete', 'update of status'] },
  { table: 'sender_ids', events: ['insert', 'delete', 'update of status, name, name_key, account_id'] },
];

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('access_revision')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('value', 'bigint', (c) => c.notNull())
    .execute();
  await sql`insert into access_revision (id, value) values (1, 0)`.execute(db);
  const bump = 'update access_revision set value = value + 1 where id = 1';
  if (dialectOf(db) === 'postgres') {
    await sql
      .raw(`create function pigeon_bump_access_revision() returns trigger language plpgsql as $$ begin ${bump}; return null; end $$`)
      .execute(db);
    for (const { table, events } of WATCHED) {
      await sql
        .raw(`create trigger ${table}_access_revision after ${events.join(' or ')} on ${table} for each statement execute function pigeon_bump_access_revision()`)
        .execute(db);
    }
    return;
  }
  for (const { table, events } of WATCHED) {
    for (const event of events) {
      const name = `${table}_access_${event.split(' ')[0]}`;
      await sql.raw(`create trigger ${name} after ${event} on ${table} begin ${bump}; end`).execute(db);
    }
  }
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
