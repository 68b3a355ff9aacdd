/**
 * Migrations live in code (src/store/migrations) and run on both dialects. They are applied on
 * start by `pigeon serve`/`pigeon worker` and by `pigeon migrate`.
 */
import { Migrator, type Migration, type MigrationProvider } from 'kysely';
import type { Db } from './connect.ts';
import * as m001 from './migrations/001-initial.ts';

const migrations: Record<string, Migration> = {
  '001-initial': m001,
};

class InCodeMigrationProvider implements MigrationProvider {
  async getMigrations(): Promise<Record<string, Migration>> {
    return migrations;
  }
}

export const LATEST_MIGRATION = Object.keys(migrations).sort().at(-1) as string;

function migrator(db: Db): Migrator {
  return new Migrator({
    db,
    provider: new InCodeMigrationProvider(),
    migrationTableName: 'pigeon_migrations',
    migrationLockTableName: 'pigeon_migrations_lock',
  });
}

export async function migrateToLatest(db: Db): Promise<string[]> {
  const { error, results } = await migrator(db).migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** Whether every known migration has been applied (for the readiness probe). */
export async function migrationsCurrent(db: Db): Promise<boolean> {
  const list = await migrator(db).getMigrations();
  return list.every((m) => m.executedAt !== undefined);
}
