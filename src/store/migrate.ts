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
import * as m019 from './migrations/019-campaign-files.ts';
import * as m020 from './migrations/020-smpp-users.ts';
import * as m021 from './migrations/021-redaction.ts';
import * as m022 from './migrations/022-rate-cards.ts';
import * as m023 from './migrations/023-smpp-routes.ts';
import * as m024 from './migrations/024-twilio.ts';
import * as m025 from './migrations/025-retention.ts';
import * as m026 from './migrations/026-smpp-parts.ts';
import * as m027 from './migrations/027-smpp-outbox-order.ts';
import * as m028 from './migrations/028-verify.ts';
import * as m029 from './migrations/029-members.ts';
import * as m030 from './migrations/030-audit.ts';
import * as m031 from './migrations/031-marketing.ts';
import * as m032 from './migrations/032-verify-one-pending.ts';
import * as m033 from './migrations/033-quiet-hours.ts';
import * as m034 from './migrations/034-tracked-links.ts';
import * as m035 from './migrations/035-verify-guard-indexes.ts';
import * as m036 from './migrations/036-verify-services-access.ts';
import * as m037 from './migrations/037-verify-guard-one-scan.ts';
import * as m038 from './migrations/038-callback-events.ts';

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
  '019-campaign-files': m019,
  '020-smpp-users': m020,
  '021-redaction': m021,
  '022-rate-cards': m022,
  '023-smpp-routes': m023,
  '024-twilio': m024,
  '025-retention': m025,
  '026-smpp-parts': m026,
  '027-smpp-outbox-order': m027,
  '028-verify': m028,
  '029-members': m029,
  '030-audit': m030,
  '031-marketing': m031,
  '032-verify-one-pending': m032,
  '033-quiet-hours': m033,
  '034-tracked-links': m034,
  '035-verify-guard-indexes': m035,
  '036-verify-services-access': m036,
  '037-verify-guard-one-scan': m037,
  '038-callback-events': m038,
};

class InCodeMigrationProvider implements MigrationProvider {
  async getMigrations(): Promise<Record<string, Migration>> {
    return migrations;
  }
}

/** Every migration this version knows, in order. */
export function knownMigrations(): string[] {
  return Object.keys(migrations).sort();
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

/**
 * PostgreSQL: the advisory lock every migration of the database takes, whatever its schema.
 * Kysely's migrator lists the tables of the whole database before it starts, and that listing
 * fails ("column ... does not exist") when another session drops a schema at the same moment:
 * migrations and schema changes made beside them (a second installation in its own schema, the
 * test suites' schemas) wait for one another instead. `MIGRATION_LOCK_KEY` is also taken by
 * the test helpers that create and drop schemas.
 */
export const MIGRATION_LOCK_KEY = 7_050_726_717; // "pigeon" on a phone keypad, roughly

async function underMigrationLock<T>(db: Db, run: (db: Db) => Promise<T>): Promise<T> {
  if (dialectOf(db) !== 'postgres') return run(db);
  return db.connection().execute(async (conn) => {
    await sql`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`.execute(conn);
    try {
      return await run(conn);
    } finally {
      await sql`select pg_advisory_unlock(${MIGRATION_LOCK_KEY})`.execute(conn);
    }
  });
}

export async function migrateToLatest(db: Db): Promise<string[]> {
  const { error, results } = await underMigrationLock(db, async (conn) => (await migrator(conn)).migrateToLatest());
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/**
 * Whether every known migration has been applied (for the readiness probe). Read from the
 * bookkeeping table itself, without the migrator's listing of every table of the database, which
 * a probe asked every few seconds has no need of.
 */
export async function migrationsCurrent(db: Db): Promise<boolean> {
  let applied: Set<string>;
  try {
    const rows = await sql<{ name: string }>`select name from pigeon_migrations`.execute(db);
    applied = new Set(rows.rows.map((r) => r.name));
  } catch (error) {
    if (isMissingTable(error)) return false;
    throw error;
  }
  return knownMigrations().every((name) => applied.has(name));
}

/** SQLite's "no such table" or PostgreSQL's undefined_table: a database never migrated. */
function isMissingTable(error: unknown): boolean {
  const e = error as { code?: string; message?: string };
  return e?.code === '42P01' || /no such table/.test(e?.message ?? '');
}

/** Applies the migrations up to and including `name` (for tests of a migration's effect on older data). */
export async function migrateTo(db: Db, name: string): Promise<void> {
  const { error } = await underMigrationLock(db, async (conn) => (await migrator(conn)).migrateTo(name));
  if (error) throw error instanceof Error ? error : new Error(String(error));
}
