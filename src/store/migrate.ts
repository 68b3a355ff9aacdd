/**
 * Migrations live in code (src/store/migrations) and run on both dialects. They are applied on
 * start by `pigeon serve`/`pigeon worker` and by `pigeon migrate`.
 */
import { Migrator, sql, type Migration, type MigrationProvider } from 'kysely';
import type { Db } from './connect.ts';
import { dialectOf } from './dialect.ts';
import * as m001 from './migrations/001-initial.ts';
import * as m003 from './migrations/003-dashboard.ts';
import * as m004 from './migrations/004-carrier-parts.ts';
import * as m005 from './migrations/005-login-backoff.ts';
import * as m006 from './migrations/006-access-revision.ts';
import * as m007 from './migrations/007-partial-message-indexes.ts';
import * as m008 from './migrations/008-carrier-route-ids.ts';
import * as m009 from './migrations/009-account-limits.ts';
import * as m011 from './migrations/011-owner-verification.ts';
import * as m012 from './migrations/012-key-form-nonce.ts';
import * as m013 from './migrations/013-two-way.ts';
import * as m014 from './migrations/014-scheduling.ts';
import * as m015 from './migrations/015-one-statement-acceptance.ts';
import * as m016 from './migrations/016-campaigns.ts';
import * as m017 from './migrations/017-dispatch-jobs-one-index.ts';
import * as m020 from './migrations/020-smpp-users.ts';

const migrations: Record<string, Migration> = {
  '001-initial': m001,
  '003-dashboard': m003,
  '004-carrier-parts': m004,
  '005-login-backoff': m005,
  '006-access-revision': m006,
  '007-partial-message-indexes': m007,
  '008-carrier-route-ids': m008,
  '009-account-limits': m009,
  '011-owner-verification': m011,
  '012-key-form-nonce': m012,
  '013-two-way': m013,
  '014-scheduling': m014,
  '015-one-statement-acceptance': m015,
  '016-campaigns': m016,
  '017-dispatch-jobs-one-index': m017,
  '020-smpp-users': m020,
};

class InCodeMigrationProvider implements MigrationProvider {
  async getMigrations(): Promise<Record<string, Migration>> {
    return migrations;
  }
}

export const LATEST_MIGRATION = Object.keys(migrations).sort().at(-1) as string;

/**
 * On PostgreSQL the bookkeeping tables live in the connection's current schema, named explicitly:
 * otherwise Kysely finds a table of the same name in another schema of the database and takes it
 * for its own.
 */
async function migrator(db: Db): Promise<Migrator> {
  let migrationTableSchema: string | undefined;
  if (dialectOf(db) === 'postgres') {
    const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
    migrationTableSchema = rows[0]?.schema;
  }
  return new Migrator({
    db,
    provider: new InCodeMigrationProvider(),
    migrationTableName: 'pigeon_migrations',
    migrationLockTableName: 'pigeon_migrations_lock',
    ...(migrationTableSchema ? { migrationTableSchema } : {}),
  });
}

export async function migrateToLatest(db: Db): Promise<string[]> {
  const { error, results } = await (await migrator(db)).migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** Whether every known migration has been applied (for the readiness probe). */
export async function migrationsCurrent(db: Db): Promise<boolean> {
  const list = await (await migrator(db)).getMigrations();
  return list.every((m) => m.executedAt !== undefined);
}

/** Applies the migrations up to and including `name` (for tests of a migration's effect on older data). */
export async function migrateTo(db: Db, name: string): Promise<void> {
  const { error } = await (await migrator(db)).migrateTo(name);
  if (error) throw error instanceof Error ? error : new Error(String(error));
}
