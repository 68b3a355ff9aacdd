/**
 * Whole SQLite database files: an online copy of a live store (`pigeon backup`, scheduled
 * backups), and putting a copy back in place of the store (`pigeon restore`). The only code that
 * handles the files themselves rather than their rows.
 */
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readSync, realpathSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import SqliteDatabase from './sqlite-driver.mjs';
import { openStore } from './connect.ts';
import { knownMigrations, migrateToLatest } from './migrate.ts';

/** Why a file cannot be copied or restored; the message says what to do. */
export type SqliteFileProblem = 'missing' | 'not_sqlite' | 'not_pigeon' | 'damaged' | 'newer_version' | 'in_use' | 'exists' | 'same_file';

export class SqliteFileError extends Error {
  constructor(
    readonly problem: SqliteFileProblem,
    message: string,
  ) {
    super(message);
    this.name = 'SqliteFileError';
  }
}

export interface PigeonFile {
  path: string;
  bytes: number;
  /** The migrations the file has, in order; the last one names its version of the schema. */
  migrations: string[];
}

const HEADER = Buffer.from('SQLite format 3\0', 'latin1');

function isSqliteFile(path: string): boolean {
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(HEADER.length);
    return readSync(fd, head, 0, head.length, 0) === head.length && head.equals(HEADER);
  } finally {
    closeSync(fd);
  }
}

function sameFile(a: string, b: string): boolean {
  if (!existsSync(a) || !existsSync(b)) return resolve(a) === resolve(b);
  return realpathSync(a) === realpathSync(b);
}

/**
 * Checks that `path` is a Pigeon database this version can open: a SQLite file, with Pigeon's
 * migrations table, no migration this version does not know, and (with `integrity: 'full'`) an
 * `integrity_check` that finds nothing; `quick` skips the check that indexes match their tables.
 */
export function inspectPigeonFile(path: string, integrity: 'full' | 'quick'): PigeonFile {
  if (!existsSync(path) || !statSync(path).isFile()) throw new SqliteFileError('missing', `There is no file ${path}.`);
  if (!isSqliteFile(path)) throw new SqliteFileError('not_sqlite', `${path} is not a SQLite database.`);
  const check = integrity === 'full' ? 'integrity_check' : 'quick_check';
  const damaged = (detail: string) => new SqliteFileError('damaged', `${path} is damaged (SQLite's ${check}: ${detail}).`);
  let db: InstanceType<typeof SqliteDatabase>;
  try {
    db = new SqliteDatabase(path, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw damaged((err as Error).message);
  }
  try {
    db.pragma('busy_timeout = 5000');
    let table: unknown;
    let problems: string[];
    try {
      table = db.prepare(`select 1 from sqlite_master where type = 'table' and name = 'pigeon_migrations'`).get();
      problems = (db.pragma(`${check}(20)`) as Record<string, string>[]).map((r) => r[check] ?? '');
    } catch (err) {
      // SQLITE_CORRUPT and its kind: the file cannot even be read far enough to be checked.
      throw damaged((err as Error).message);
    }
    if (problems.length !== 1 || problems[0] !== 'ok') throw damaged(problems.slice(0, 3).join('; '));
    if (!table) throw new SqliteFileError('not_pigeon', `${path} is a SQLite database, but not a Pigeon one (it has no pigeon_migrations table).`);
    const migrations = (db.prepare('select name from pigeon_migrations order by name').all() as { name: string }[]).map((r) => r.name);
    const known = new Set(knownMigrations());
    const unknown = migrations.filter((m) => !known.has(m));
    if (unknown.length > 0) {
      throw new SqliteFileError(
        'newer_version',
        `${path} comes from a newer version of Pigeon (it has migrations this one does not know: ${unknown.join(', ')}). Restore it with that version or a later one.`,
      );
    }
    return { path, bytes: statSync(path).size, migrations };
  } finally {
    db.close();
  }
}

/**
 * Copies the live database `source` to the new file `target` on a thread (backup-worker.mjs);
 * with `check`, the thread also makes the copy a file on its own and runs `quick_check` on it,
 * and gives back what the check found (`['ok']` for a sound copy).
 */
function copyOnThread(source: string, target: string, check: boolean): Promise<{ copiedMs: number; problems: string[] }> {
  return new Promise((resolvePromise, reject) => {
    const worker = new Worker(new URL('./backup-worker.mjs', import.meta.url), { workerData: { source, target, check } });
    let settled = false;
    worker.once('message', (m: { ok: boolean; copiedMs?: number; problems?: string[]; message?: string }) => {
      settled = true;
      if (m.ok) resolvePromise({ copiedMs: m.copiedMs!, problems: m.problems ?? [] });
      else reject(new Error(`the copy of ${source} failed: ${m.message}`));
    });
    worker.once('error', (err) => {
      settled = true;
      reject(err);
    });
    worker.once('exit', (code) => {
      if (!settled) reject(new Error(`the copy of ${source} stopped (thread exit ${code})`));
    });
  });
}

function syncFile(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function removeDatabaseFiles(path: string): void {
  for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(`${path}${suffix}`, { force: true });
}

/** Makes a copied file a single file on its own (no WAL beside it), and checks it. */
function settleCopy(path: string, integrity: 'full' | 'quick'): PigeonFile {
  const db = new SqliteDatabase(path, { fileMustExist: true });
  try {
    db.pragma('journal_mode = DELETE');
  } finally {
    db.close();
  }
  return inspectPigeonFile(path, integrity);
}

export interface CopyResult extends PigeonFile {
  /** How long the copy's read transaction lasted (the time the WAL could not be checkpointed). */
  copiedMs: number;
}

/**
 * Copies the database at `source`, which a server may be writing, into `target`: consistent as of
 * one commit, checked with `quick_check`, written beside the target and renamed into place once
 * complete, so that `target` is never a half-written file. `replace` allows an existing target.
 */
export async function copyLiveDatabase(source: string, target: string, opts: { replace?: boolean } = {}): Promise<CopyResult> {
  const from = resolve(source);
  const to = resolve(target);
  if (!existsSync(from)) throw new SqliteFileError('missing', `There is no database at ${from}.`);
  if (sameFile(from, to)) throw new SqliteFileError('same_file', `${to} is the database itself; name another file.`);
  if (existsSync(to) && !opts.replace) throw new SqliteFileError('exists', `${to} exists already; name a new file, or remove it first.`);
  // The source must be a Pigeon database; its full check is for restore, which reads it once.
  const db = new SqliteDatabase(from, { readonly: true, fileMustExist: true });
  try {
    if (!db.prepare(`select 1 from sqlite_master where type = 'table' and name = 'pigeon_migrations'`).get()) {
      throw new SqliteFileError('not_pigeon', `${from} is not a Pigeon database.`);
    }
  } finally {
    db.close();
  }
  mkdirSync(dirname(to), { recursive: true });
  const partial = `${to}.partial-${process.pid}`;
  removeDatabaseFiles(partial);
  try {
    const { copiedMs, problems } = await copyOnThread(from, partial, true);
    if (problems.length !== 1 || problems[0] !== 'ok') throw new SqliteFileError('damaged', `The copy of ${from} failed SQLite's quick_check: ${problems.slice(0, 3).join('; ')}.`);
    const migrations = migrationsOf(partial);
    const bytes = statSync(partial).size;
    renameSync(partial, to);
    syncFile(dirname(to));
    return { path: to, bytes, migrations, copiedMs };
  } catch (err) {
    removeDatabaseFiles(partial);
    throw err;
  }
}

/** The migrations a database file has applied (a small table: cheap on the event loop). */
function migrationsOf(path: string): string[] {
  const db = new SqliteDatabase(path, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('select name from pigeon_migrations order by name').all() as { name: string }[]).map((r) => r.name);
  } finally {
    db.close();
  }
}

/**
 * Throws `in_use` when another process has the database at `path` open (a server or worker):
 * leaving WAL mode needs every other connection closed, and a process that died holds none.
 * A file that is not a SQLite database is refused too: it is not Pigeon's to replace.
 */
function ensureNotInUse(path: string): void {
  if (!existsSync(path)) return;
  if (!isSqliteFile(path) && statSync(path).size > 0) {
    throw new SqliteFileError('not_sqlite', `${path} exists and is not a SQLite database; move it away or name another DATABASE_URL.`);
  }
  const db = new SqliteDatabase(path, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 0');
    db.pragma('journal_mode = DELETE');
  } catch (err) {
    if ((err as { code?: string }).code?.startsWith('SQLITE_BUSY') || (err as { code?: string }).code?.startsWith('SQLITE_LOCKED')) {
      throw new SqliteFileError('in_use', `${path} is in use by another process: stop every \`pigeon serve\` and \`pigeon worker\` on it, then restore.`);
    }
    throw err;
  } finally {
    db.close();
  }
}

export interface RestoreResult extends PigeonFile {
  /** The migrations applied to the restored copy (a backup of an older version). */
  applied: string[];
  /** Where the database that was in place went, or null when there was none. */
  previous: string | null;
}

/**
 * Puts a copy of the backup `source` in place of the database at `target`, which no process may
 * have open: the backup is checked in full, copied beside the target, migrated to this version,
 * and renamed into place; the database that was there is kept as `<target>.before-restore-<time>`.
 */
export async function restoreDatabaseFile(source: string, target: string, now: number): Promise<RestoreResult> {
  const from = resolve(source);
  const to = resolve(target);
  if (sameFile(from, to)) throw new SqliteFileError('same_file', `${from} is the database DATABASE_URL names; restore from a backup file.`);
  inspectPigeonFile(from, 'full');
  ensureNotInUse(to);
  mkdirSync(dirname(to), { recursive: true });
  const restoring = `${to}.restoring-${process.pid}`;
  removeDatabaseFiles(restoring);
  try {
    await copyOnThread(from, restoring, false);
    const store = openStore(`sqlite:${restoring}`);
    let applied: string[];
    try {
      applied = await migrateToLatest(store.db);
    } finally {
      await store.close();
    }
    const file = settleCopy(restoring, 'quick');
    syncFile(restoring);
    ensureNotInUse(to);
    let previous: string | null = null;
    if (existsSync(to)) {
      previous = `${to}.before-restore-${new Date(now).toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')}`;
      renameSync(to, previous);
      for (const suffix of ['-wal', '-shm', '-journal']) rmSync(`${to}${suffix}`, { force: true });
    }
    renameSync(restoring, to);
    syncFile(dirname(to));
    return { ...file, path: to, applied, previous };
  } catch (err) {
    removeDatabaseFiles(restoring);
    throw err;
  }
}
