/**
 * A fresh, migrated store per test. SQLite in memory by default; with TEST_DATABASE_URL set to a
 * PostgreSQL URL, a new schema of that database per store, dropped on close.
 */
import { randomBytes } from 'node:crypto';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { openStore, type Store } from '../../src/store/connect.ts';
import type { Database } from '../../src/store/database.ts';
import { migrateToLatest } from '../../src/store/migrate.ts';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? '';
export const testDialect = TEST_DATABASE_URL.startsWith('postgres') ? 'postgres' : 'sqlite';

export async function openTestStore(): Promise<Store> {
  if (testDialect === 'sqlite') {
    const store = openStore('sqlite::memory:');
    await migrateToLatest(store.db);
    return store;
  }
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  await admin.end();
  const pool = new pg.Pool({ connectionString: TEST_DATABASE_URL, max: 10, options: `-c search_path=${schema}` });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  await migrateToLatest(db);
  return {
    db,
    dialect: 'postgres',
    async close() {
      await db.destroy();
      const cleanup = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await cleanup.connect();
      await cleanup.query(`drop schema ${schema} cascade`);
      await cleanup.end();
    },
  };
}
