import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

/**
 * Every verification created reads its service. Services change about as rarely as Sender IDs,
 * so each process keeps them in the access cache (access-cache.ts), trusted while the access
 * revision stands still: a service changed or deleted (a soft delete is an update) moves it, in
 * the change's own transaction, whichever process makes the change. A new service needs no move:
 * a service not found is never cached.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (dialectOf(db) === 'postgres') {
    // pigeon_bump_access_revision() comes from migration 006.
    await sql.raw('create trigger verify_services_access_revision after update or delete on verify_services for each statement execute function pigeon_bump_access_revision()').execute(db);
  } else {
    const bump = 'update access_revision set value = value + 1 where id = 1';
    for (const event of ['update', 'delete']) {
      await sql.raw(`create trigger verify_services_access_${event} after ${event} on verify_services begin ${bump}; end`).execute(db);
    }
  }
}

export async function down(): Promise<void> {
  throw new Error('Pigeon migrations are forward-only; restore from a backup to go back.');
}
