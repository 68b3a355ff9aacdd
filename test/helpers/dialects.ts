/**
 * Runs a store suite once per dialect available: SQLite always, PostgreSQL when TEST_DATABASE_URL
 * names one (`npm run test:pg`). `open()` gives a fresh, migrated store built as production builds
 * it (`openStore`, so PostgreSQL has the same pool and `int8` parser); stores a test leaves open
 * are closed after it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe } from 'node:test';
import pg from 'pg';
import { openStore, type Store } from '../../src/store/connect.ts';
import { migrateToLatest } from '../../src/store/migrate.ts';
import { TEST_DATABASE_URL } from './test-store.ts';

export type TestDialect = 'sqlite' | 'postgres';

export const availableDialects: readonly TestDialect[] = TEST_DATABASE_URL.startsWith('postgres') ? ['sqlite', 'postgres'] : ['sqlite'];

async function pgAdmin(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

async function openDialect(dialect: TestDialect): Promise<Store> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'pigeon-store-'));
    const store = openStore(`sqlite:${join(dir, 'test.db')}`);
    await migrateToLatest(store.db);
    return {
      ...store,
      async close() {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const schema = `s_${randomBytes(6).toString('hex')}`;
  await pgAdmin(`create schema ${schema}`);
  const url = `${TEST_DATABASE_URL}${TEST_DATABASE_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  const store = openStore(url);
  await migrateToLatest(store.db);
  return {
    ...store,
    async close() {
      await store.close();
      await pgAdmin(`drop schema ${schema} cascade`);
    },
  };
}

export function forEachDialect(suite: (dialect: TestDialect, open: () => Promise<Store>) => void): void {
  for (const dialect of availableDialects) {
    describe(dialect, () => {
      const open = new Set<Store>();
      afterEach(async () => {
        const stores = [...open];
        open.clear();
        await Promise.all(stores.map((store) => store.close()));
      });
      suite(dialect, async () => {
        const store = await openDialect(dialect);
        let closed: Promise<void> | null = null;
        const tracked: Store = {
          ...store,
          close() {
            open.delete(tracked);
            closed ??= store.close();
            return closed;
          },
        };
        open.add(tracked);
        return tracked;
      });
    });
  }
}
