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
import { randomBytes } from 'node:crypto';
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

/**
 * A PostgreSQL schema for a new store: one that an earlier store of this process finished with,
 * emptied, or else a new one from the template. Null when the run has no template (the caller
 * makes and migrates a schema as before).
 *
 * Making a schema from the script and dropping it cost the server some 0.5 s of CPU a store; the
 * store suites open one a test. A schema given back is emptied instead (its rows deleted with
 * triggers and foreign keys off, the migrations' rows of the template put back): a few
 * milliseconds. One whose tables, triggers or functions a test changed (a table renamed or dropped
 * to make a statement fail) is dropped rather than used again. What is left when the process ends
 * is dropped then, and the runner drops any schema of the run that a killed process left behind.
 */
export async function takePostgresSchema(databaseUrl: string, admin: (text: string) => Promise<void>): Promise<string | null> {
  const reused = idle.pop();
  if (reused) return reused;
  const schema = `t_${RUN_ID}_${randomBytes(5).toString('hex')}`;
  if (!RUN_ID || !(await postgresFromTemplate(databaseUrl, schema, admin))) return null;
  adminUrl ??= databaseUrl;
  templateLayout ??= await layoutOf(schema); // fresh from the template: no test has run in it yet
  return schema;
}

/** Takes back a schema of takePostgresSchema's, its store closed: emptied for the next store, or dropped. */
export async function givePostgresSchemaBack(schema: string, admin: (text: string) => Promise<void>): Promise<void> {
  const script = await pgScript;
  if (!script || (await layoutOf(schema)) !== templateLayout) {
    await admin(`drop schema if exists ${schema} cascade`);
    return;
  }
  await (await connection()).query(emptyingScript(script).replaceAll(PLACEHOLDER, schema));
  idle.push(schema);
}

async function layoutOf(schema: string): Promise<string> {
  const { rows } = await (await connection()).query<{ layout: string }>(LAYOUT_QUERY, [schema]);
  return rows[0]!.layout;
}

/** Names this run's schemas, so that the runner can drop those a killed process left behind. */
const RUN_ID = /^[a-z0-9]+$/.test(process.env.TEST_RUN_ID ?? '') ? process.env.TEST_RUN_ID! : '';
const idle: string[] = [];
let adminUrl: string | undefined;
let adminPool: pg.Pool | undefined;
let templateLayout: string | undefined;
let emptying: string | undefined;

// Everything a test could change about a schema short of its rows.
const LAYOUT_QUERY = `select md5(concat_ws('|',
  (select string_agg(relname || ':' || relkind::text, ',' order by relname) from pg_class where relnamespace = $1::regnamespace),
  (select string_agg(c.relname || '.' || tgname, ',' order by c.relname, tgname) from pg_trigger t join pg_class c on c.oid = t.tgrelid where c.relnamespace = $1::regnamespace),
  (select string_agg(proname, ',' order by proname) from pg_proc where pronamespace = $1::regnamespace))) as layout`;

async function connection(): Promise<pg.Pool> {
  // Idle connections do not hold the process open: the drops at its end run from beforeExit.
  adminPool ??= new pg.Pool({ connectionString: adminUrl, max: 1, allowExitOnIdle: true });
  return adminPool;
}

/** Deletes every row but the migrations' bookkeeping and puts the template's other rows back, in one transaction. */
function emptyingScript(script: string): string {
  if (emptying) return emptying;
  const kept = new Set(['pigeon_migrations', 'pigeon_migrations_lock']);
  const tables = [...script.matchAll(new RegExp(`^CREATE TABLE ${PLACEHOLDER}\\.(\\w+) \\(`, 'gm'))].map((m) => m[1]!).filter((t) => !kept.has(t));
  const rows = script.split('\n').filter((line) => line.startsWith(`INSERT INTO ${PLACEHOLDER}.`) && !kept.has(line.slice(`INSERT INTO ${PLACEHOLDER}.`.length).split(' ')[0]!));
  emptying = ['SET LOCAL session_replication_role = replica;', ...tables.map((t) => `DELETE FROM ${PLACEHOLDER}.${t};`), ...rows].join('\n');
  return emptying;
}

process.once('beforeExit', () => {
  if (!adminPool) return;
  const pool = adminPool;
  const left = idle.splice(0);
  void (async () => {
    try {
      if (left.length > 0) {
        const client = await pool.connect();
        try {
          await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
          await client.query(`drop schema if exists ${left.join(', ')} cascade`);
        } finally {
          client.release();
        }
      }
    } catch (error) {
      // Not the tests' failure: the runner drops what is left at the end of the run.
      process.stderr.write(`could not drop this file's test schemas: ${(error as Error).message}\n`);
    } finally {
      await pool.end().catch(() => {});
    }
  })();
});

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
