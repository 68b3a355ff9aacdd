/**
 * Backups of a SQLite store (DECISIONS.md §13, docs/deployment.md "Backups"): `pigeon backup`
 * copies the live file, `pigeon restore` puts a copy back while no process has it open, and each
 * process with workers takes the scheduled ones into BACKUP_DIR, keeping the newest BACKUP_KEEP.
 * PostgreSQL has its own tools; both commands say which and how.
 */
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../../config/config.ts';
import { backupDue, backupFileName, backupsToRemove } from '../../domain/backup-schedule.ts';
import { sqlitePath } from '../../store/connect.ts';
import { copyLiveDatabase, restoreDatabaseFile, SqliteFileError, type SqliteFileProblem } from '../../store/sqlite-files.ts';
import type { Context } from '../context.ts';

/**
 * A backup or restore that cannot be done. `postgres` marks the one that asks for the wrong tool
 * (the database is PostgreSQL): a usage mistake rather than a refusal.
 */
export class BackupError extends Error {
  constructor(
    readonly code: SqliteFileProblem | 'postgres' | 'memory',
    message: string,
  ) {
    super(message);
    this.name = 'BackupError';
  }
}

export const PG_BACKUP_ADVICE =
  'DATABASE_URL is a PostgreSQL database: back it up with pg_dump, which copies a consistent snapshot while Pigeon runs, ' +
  'for example `pg_dump --format=custom --file=pigeon.dump "$DATABASE_URL"` (docs/deployment.md, "Backups").';

export const PG_RESTORE_ADVICE =
  'DATABASE_URL is a PostgreSQL database: restore a pg_dump file with pg_restore into an empty database, with every Pigeon process stopped, ' +
  'for example `pg_restore --no-owner --dbname="$DATABASE_URL" pigeon.dump`, then `pigeon migrate` (docs/deployment.md, "Backups").';

function sqliteFile(config: Config, advice: string): string {
  if (!config.databaseUrl.startsWith('sqlite:')) throw new BackupError('postgres', advice);
  const path = sqlitePath(config.databaseUrl);
  if (path === ':memory:') throw new BackupError('memory', 'DATABASE_URL is an in-memory database: there is nothing on disk to back up or restore.');
  return path;
}

async function translated<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof SqliteFileError) throw new BackupError(err.problem, err.message);
    throw err;
  }
}

export interface BackupTaken {
  file: string;
  bytes: number;
  /** The newest migration in the copy: the version of Pigeon able to restore it. */
  migration: string | null;
  /** How long the copy took (its read snapshot; the WAL grows meanwhile). */
  copiedMs: number;
}

/** Copies the configured SQLite store, which may be serving meanwhile, to `file`. */
export async function backupDatabase(config: Config, file: string, opts: { replace?: boolean } = {}): Promise<BackupTaken> {
  const source = sqliteFile(config, PG_BACKUP_ADVICE);
  const copy = await translated(() => copyLiveDatabase(source, file, opts));
  return { file: copy.path, bytes: copy.bytes, migration: copy.migrations.at(-1) ?? null, copiedMs: copy.copiedMs };
}

export interface Restored {
  file: string;
  bytes: number;
  /** Migrations applied to bring a backup of an older version up to this one. */
  applied: string[];
  /** Where the database that was in place was kept, or null when there was none. */
  previous: string | null;
}

/** Replaces the configured SQLite store, which no process may have open, with the backup `file`. */
export async function restoreDatabase(config: Config, file: string, now: number): Promise<Restored> {
  const target = sqliteFile(config, PG_RESTORE_ADVICE);
  const restored = await translated(() => restoreDatabaseFile(file, target, now));
  return { file: restored.path, bytes: restored.bytes, applied: restored.applied, previous: restored.previous };
}

const LOCK = '.pigeon-backup.lock';

/** Whether the process that wrote a lock file is still running (processes on one SQLite file share a machine). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Takes the folder's lock, so that two processes with workers on one file do not both take the
 * due backup; a lock left by a process that has died is taken over.
 */
function lockFolder(dir: string): (() => void) | null {
  const path = join(dir, LOCK);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => rmSync(path, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number(readFileSync(path, 'utf8').trim());
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && alive(holder)) return null;
      if (holder === process.pid) return null;
      rmSync(path, { force: true });
    }
  }
  return null;
}

export interface ScheduledBackup {
  /** The backup taken now, or null when none was due (or another process is taking it). */
  taken: BackupTaken | null;
  /** The old backups removed to keep BACKUP_KEEP. */
  removed: string[];
}

/**
 * Takes the scheduled backup if one is due (see backup-schedule.ts) and removes the oldest beyond
 * BACKUP_KEEP. Copies left by a process that died mid-backup are removed with them.
 */
export async function runScheduledBackup(ctx: Pick<Context, 'config' | 'clock' | 'log'>): Promise<ScheduledBackup> {
  const schedule = ctx.config.backup;
  if (!schedule) return { taken: null, removed: [] };
  const now = ctx.clock();
  mkdirSync(schedule.dir, { recursive: true });
  if (!backupDue(readdirSync(schedule.dir), now, schedule.intervalHours * 3_600_000)) return { taken: null, removed: [] };
  const unlock = lockFolder(schedule.dir);
  if (!unlock) return { taken: null, removed: [] };
  try {
    const names = readdirSync(schedule.dir);
    // Read again under the lock: another process may have taken it since.
    if (!backupDue(names, now, schedule.intervalHours * 3_600_000)) return { taken: null, removed: [] };
    for (const name of names) if (/^pigeon-\d{8}T\d{6}Z\.db\.partial-\d+(-wal|-shm|-journal)?$/.test(name)) rmSync(join(schedule.dir, name), { force: true });
    const taken = await backupDatabase(ctx.config, join(schedule.dir, backupFileName(now)));
    const removed = backupsToRemove(readdirSync(schedule.dir), schedule.keep);
    for (const name of removed) rmSync(join(schedule.dir, name), { force: true });
    ctx.log.info({ file: taken.file, bytes: taken.bytes, copied_ms: taken.copiedMs, removed }, 'backup taken');
    return { taken, removed };
  } finally {
    unlock();
  }
}
