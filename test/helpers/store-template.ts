/**
 * Migrated stores for tests, copied from a template instead of migrated one by one. Running the
 * thirty-odd migrations took 60-140 ms a SQLite store and 400-800 ms a PostgreSQL schema (under
 * the lock every migration of the database takes, so files waited for each other); a test run
 * opens hundreds. `scripts/run-tests.mjs` names a folder for the run's templates
 * (TEST_STORE_TEMPLATES) and removes it at the end, so a template never outlives the code of the
 * migrations it was made by; without that folder every store is migrated as before.
 *
 * SQLite: the first file that needs one migrates a store and closes it (leaving no WAL), and every
 * store after that, in any file of the run, is a copy of that file.
 *
 * PostgreSQL: the first file migrates a schema and keeps what `pg_dump` prints of it (its tables,
 * indexes, functions, triggers and rows, the migrations' bookkeeping among them); every schema
 * after that is that script run once with the schema's name put in, in one transaction.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { openStore } from '../../src/store/connect.ts';
import { MIGRATION_LOCK_KEY, migrateToLatest } from '../../src/store/migrate.ts';

const TEMPLATES = process.env.TEST_STORE_TEMPLATES ?? '';
/** Held while one process makes the PostgreSQL template; not the migrations' own lock, which the migrator takes inside it. */
const TEMPLATE_LOCK_KEY = MIGRATION_LOCK_KEY + 1;

/**
 * Makes `path` a migrated SQLite store: a copy of the run's template (made first if this is the
 * first store of the run). False when the run has no template folder: the caller migrates.
 */
export async function sqliteFromTemplate(path: string): Promise<boolean> {
  if (!TEMPLATES || !existsSync(TEMPLATES)) return false;
  const template = join(TEMPLATES, 'sqlite.db');
  if (!existsSync(template)) {
    // Two files may make it at once: each makes its own and renames it into place, whole.
    const mine = join(TEMPLATES, `sqlite.${process.pid}.db`);
    const store = openStore(`sqlite:${mine}`);
    try {
      await migrateToLatest(store.db);
    } finally {
      await store.close();
    }
    renameSync(mine, template);
  }
  copyFileSync(template, path);
  return true;
}

/** The script, once this process has it (null: no pg_dump, so schemas are migrated). */
let pgScript: Promise<string | null> | undefined;
const PLACEHOLDER = 'pigeon_template_schema';

/**
 * Creates schema `schema` of `databaseUrl`, migrated, from the run's template script (made first if
 * none is there yet). False when the run has no template folder or no `pg_dump`: the caller
 * migrates. `admin` runs SQL on the database itself, under the migrations' lock.
 */
export async function postgresFromTemplate(databaseUrl: string, schema: string, admin: (text: string) => Promise<void>): Promise<boolean> {
  if (!TEMPLATES || !existsSync(TEMPLATES)) return false;
  pgScript ??= templateScript(databaseUrl).catch((error: unknown) => {
    pgScript = undefined; // the next store tries again
    throw error;
  });
  const script = await pgScript;
  if (script === null) return false;
  await admin(script.replaceAll(PLACEHOLDER, schema));
  return true;
}

async function templateScript(databaseUrl: string): Promise<string | null> {
  const file = join(TEMPLATES, 'postgres.sql');
  if (existsSync(file)) return readFileSync(file, 'utf8');
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [TEMPLATE_LOCK_KEY]);
    if (existsSync(file)) return readFileSync(file, 'utf8');
    const schema = `${PLACEHOLDER}_${process.pid}`;
    await client.query(`select pg_advisory_lock($1)`, [MIGRATION_LOCK_KEY]);
    await client.query(`drop schema if exists ${schema} cascade; create schema ${schema}`);
    await client.query(`select pg_advisory_unlock($1)`, [MIGRATION_LOCK_KEY]);
    const url = `${databaseUrl}${databaseUrl.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
    const store = openStore(url);
    try {
      await migrateToLatest(store.db);
    } finally {
      await store.close();
    }
    let dump: string;
    // pg_dump reads the catalog of the whole database: under the lock, no other file's schema is
    // dropped while it does.
    await client.query(`select pg_advisory_lock($1)`, [MIGRATION_LOCK_KEY]);
    try {
      ({ stdout: dump } = await promisify(execFile)('pg_dump', ['--dbname', databaseUrl, '--schema', schema, '--inserts', '--no-owner', '--no-privileges'], { maxBuffer: 64 << 20 }));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      return null; // no pg_dump here: every schema is migrated
    } finally {
      await client.query(`drop schema if exists ${schema} cascade`);
      await client.query(`select pg_advisory_unlock($1)`, [MIGRATION_LOCK_KEY]);
    }
    // psql's meta-commands (`\restrict`, from pg_dump 15.14 on) are not SQL.
    const script = dump
      .split('\n')
      .filter((line) => !line.startsWith('\\'))
      .join('\n')
      .replaceAll(schema, PLACEHOLDER);
    writeFileSync(`${file}.${process.pid}`, script);
    renameSync(`${file}.${process.pid}`, file);
    return script;
  } finally {
    await client.end();
  }
}
