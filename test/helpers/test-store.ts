/**
 * A fresh, migrated store per test: a SQLite file in a temporary folder by default, or, with
 * TEST_DATABASE_URL set to a PostgreSQL URL, a new schema of that database, dropped on close.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { loadConfig } from '../../src/config/config.ts';
import type { Context } from '../../src/services/context.ts';
import { openStore, type Store } from '../../src/store/connect.ts';
import { systemClock } from '../../src/util/ids.ts';
import { MIGRATION_LOCK_KEY, migrateTo, migrateToLatest } from '../../src/store/migrate.ts';
import { givePostgresSchemaBack, postgresFromTemplate, sqliteFromTemplate, takePostgresSchema } from './store-template.ts';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? '';
export const testDialect: TestDialect = TEST_DATABASE_URL.startsWith('postgres') ? 'postgres' : 'sqlite';

/**
 * A context for calling the services directly on `store`, beside a server process or in a script:
 * the real clock, no logs, no workers to wake.
 */
export function serviceContext(store: Store, env: NodeJS.ProcessEnv = {}): Context {
  return { store, config: loadConfig(env), clock: systemClock, log: pino({ level: 'silent' }), wake: () => {} };
}

export type TestDialect = 'sqlite' | 'postgres';

/**
 * For a suite about one store only (a SQLite file's disk, a PostgreSQL server's restart), which
 * starts its own database whatever TEST_DATABASE_URL says: it runs in that store's run (`npm
 * test` for SQLite, `npm run test:pg` for PostgreSQL) and is skipped, saying where it runs, in
 * the other, which would only repeat it.
 */
export function onlyInRunOf(dialect: TestDialect): string | false {
  return testDialect === dialect ? false : `about ${dialect === 'postgres' ? 'PostgreSQL' : 'SQLite'} only: runs in ${dialect === 'postgres' ? 'npm run test:pg' : 'npm test'}`;
}

/** The URL that selects `schema` of TEST_DATABASE_URL, through the connection's `options`. */
export function schemaUrl(schema: string): string {
  return `${TEST_DATABASE_URL}${TEST_DATABASE_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
}

/**
 * A fresh, migrated store of `dialect`, opened by `openStore` as production opens it (the same
 * pool and type parsers on PostgreSQL, the same connections and statement caches on SQLite).
 * `upTo` stops after that migration (for a test of the next one); by default all run.
 */
export async function openTestStore(dialect: TestDialect = testDialect, opts: { upTo?: string } = {}): Promise<Store> {
  const migrate = (store: Store) => (opts.upTo === undefined ? migrateToLatest(store.db) : migrateTo(store.db, opts.upTo));
  if (dialect === 'sqlite') {
    // A file, as in production: it has the separate read connection that ':memory:' cannot have.
    const dir = mkdtempSync(join(tmpdir(), 'pigeon-test-'));
    const copied = opts.upTo === undefined && (await sqliteFromTemplate(join(dir, 'test.db')));
    const store = openStore(`sqlite:${join(dir, 'test.db')}`);
    if (!copied) await migrate(store);
    return {
      ...store,
      async close() {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  if (!TEST_DATABASE_URL.startsWith('postgres')) throw new Error('a PostgreSQL test store needs TEST_DATABASE_URL');
  const pooled = opts.upTo === undefined ? await takePostgresSchema(TEST_DATABASE_URL, pgAdmin) : null;
  const schema = pooled ?? `t_${randomBytes(6).toString('hex')}`;
  if (!pooled) await pgAdmin(`create schema ${schema}`);
  const store = openStore(schemaUrl(schema));
  if (!pooled) await migrate(store);
  return {
    ...store,
    async close() {
      await store.close();
      if (pooled) await givePostgresSchemaBack(schema, pgAdmin);
      else await pgAdmin(`drop schema ${schema} cascade`);
    },
  };
}

/**
 * A database for tests that run `pigeon` as child processes: a SQLite file in `dir`, or, under
 * `npm run test:pg`, a schema of its own in TEST_DATABASE_URL (named `<name>_<pid>`) that the
 * children select through the URL's `options`.
 */
export interface ProcessDatabase {
  url: string;
  /** Creates the database afresh, migrated, and opens the test's own store on it. */
  open(): Promise<Store>;
  /** Closes that store and drops the database. */
  close(): Promise<void>;
}

/**
 * Runs `text` on TEST_DATABASE_URL itself, over a connection of its own (creating or dropping a
 * schema), under the lock migrations take: test files run side by side, and a schema dropped while
 * another file's migrator lists the database's tables makes that listing fail.
 */
export async function pgAdmin(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(text);
  } finally {
    await client.end();
  }
}

export function processDatabase(name: string, dir: string): ProcessDatabase {
  const schema = `${name}_${process.pid}`;
  const url = testDialect === 'sqlite' ? `sqlite:${join(dir, `${name}.db`)}` : schemaUrl(schema);
  let store: Store | null = null;
  return {
    url,
    async open() {
      let copied: boolean;
      if (testDialect === 'postgres') {
        await pgAdmin(`drop schema if exists ${schema} cascade`);
        copied = await postgresFromTemplate(TEST_DATABASE_URL, schema, pgAdmin);
        if (!copied) await pgAdmin(`create schema ${schema}`);
      } else {
        // A file already there is opened as it is (a test that reopens its store reads what it wrote).
        copied = !existsSync(join(dir, `${name}.db`)) && (await sqliteFromTemplate(join(dir, `${name}.db`)));
      }
      store = openStore(url);
      if (!copied) await migrateToLatest(store.db);
      return store;
    },
    async close() {
      await store?.close();
      if (testDialect === 'postgres') await pgAdmin(`drop schema if exists ${schema} cascade`);
    },
  };
}

/** Waits until no dispatch or receipt job is left (workers in other processes drain them). */
export async function waitForEmptyQueues(store: Store, timeoutMs: number, diagnostics: () => string = () => ''): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const row = await store.db
      .selectFrom('jobs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('queue', 'in', ['dispatch', 'receipt'])
      .executeTakeFirstOrThrow();
    if (Number(row.n) === 0) return;
    if (Date.now() > deadline) throw new Error(`still ${row.n} dispatch/receipt jobs\n${diagnostics()}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
