import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

/**
 * The audit log and operator roles (DECISIONS.md §15).
 *
 * - `audit_events`: one row per change made by a person, an API key or the command line, written
 *   in the transaction of the change. Append-only: a trigger on each store refuses any UPDATE, so
 *   not even a mistaken repository function can rewrite history; rows leave only through the
 *   retention purge (RETENTION_AUDIT_DAYS), which deletes the oldest.
 *   `changes` is JSON text (`{"field":[before,after]}`), the same on both stores.
 * - `operators.role`: `admin`, `support` or `finance`; the operators made before roles existed
 *   could do everything, so they become `admin`.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('audit_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('account_id', 'text')
    .addColumn('actor_type', 'text', (c) => c.notNull())
    .addColumn('actor_id', 'text')
    .addColumn('actor_email', 'text')
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('target_type', 'text')
    .addColumn('target_id', 'text')
    .addColumn('ip', 'text')
    .addColumn('changes', 'text', (c) => c.notNull())
    .execute();
  // An account's page of its log, newest first; the operator's view of everything by time; the purge by time.
  await db.schema.createIndex('audit_events_account_at').on('audit_events').columns(['account_id', 'at', 'id']).execute();
  await db.schema.createIndex('audit_events_at').on('audit_events').columns(['at', 'id']).execute();

  if (dialectOf(db as never) === 'postgres') {
    await sql
      .raw(
        `create function audit_events_append_only() returns trigger language plpgsql as $$
begin
  raise exception 'audit_events is append-only' using errcode = 'P0001';
end $$;
create trigger audit_events_no_update before update on audit_events
  for each row execute function audit_events_append_only();`,
      )
      .execute(db);
  } else {
    await sql
      .raw(`create trigger audit_events_no_update before update on audit_events begin select raise(abort, 'audit_events is append-only'); end`)
      .execute(db);
  }

  await db.schema.alterTable('operators').addColumn('role', 'text', (c) => c.notNull().defaultTo('admin')).execute();
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
