/**
 * What can go wrong when a process starts, said in terms of the setting at fault: where the
 * database lives, and the errors of opening it and of listening (DECISIONS.md §7). The command line
 * prints these as `VARIABLE=value: what is wrong. What to do` and exits without a stack trace.
 */
import { closeSync, existsSync, mkdirSync, openSync, statSync, unlinkSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ConfigError, maskUrlPassword, type Config, type ConfigProblem } from './config.ts';

/** The SQLite file DATABASE_URL names, or null for PostgreSQL and in-memory databases. */
export function sqliteFile(databaseUrl: string): string | null {
  if (!databaseUrl.startsWith('sqlite:')) return null;
  const path = databaseUrl.slice('sqlite:'.length);
  return path === ':memory:' ? null : resolve(path);
}

function databaseProblem(databaseUrl: string, message: string, hint: string): ConfigError {
  const problem: ConfigProblem = { variable: 'DATABASE_URL', value: maskUrlPassword(databaseUrl), message, hint };
  return new ConfigError(`DATABASE_URL=${JSON.stringify(problem.value)}: ${message}. ${hint}`, [problem]);
}

/**
 * Checks that the SQLite file can be used before anything opens it. With `create` false a missing
 * file is an error: a command run from the wrong folder, or with a mistyped path, must say so
 * instead of starting an empty database. With `create` true the folders are made one level at a
 * time (a recursive mkdir under a virtual file system such as /proc can loop forever) and a probe
 * file proves the folder writable, since SQLite writes its -wal and -shm files beside the database.
 */
export function checkDatabaseLocation(databaseUrl: string, create: boolean): void {
  const file = sqliteFile(databaseUrl);
  if (!file) return;
  const folder = dirname(file);
  if (existsSync(file)) {
    if (statSync(file).isDirectory()) throw databaseProblem(databaseUrl, `${file} is a folder, not a database file`, 'Name a file, e.g. sqlite:./data/pigeon.db');
    try {
      closeSync(openSync(file, 'r+'));
    } catch (err) {
      throw databaseProblem(databaseUrl, `${file} cannot be opened for writing (${(err as NodeJS.ErrnoException).code})`, 'Give this user write access to the file, or point DATABASE_URL elsewhere');
    }
  } else if (!create) {
    throw databaseProblem(
      databaseUrl,
      `there is no Pigeon database at ${file}`,
      'Run pigeon from the folder that holds data/pigeon.db, set DATABASE_URL to the server\'s database, or create one with `pigeon migrate`',
    );
  }
  const missing: string[] = [];
  for (let dir = folder; !existsSync(dir); dir = dirname(dir)) {
    if (dirname(dir) === dir) break;
    missing.unshift(dir);
  }
  try {
    for (const dir of missing) mkdirSync(dir);
    const probe = join(folder, `.pigeon-write-check-${process.pid}`);
    closeSync(openSync(probe, 'wx'));
    unlinkSync(probe);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw databaseProblem(
      databaseUrl,
      `the folder ${folder} cannot be created or written to (${code})`,
      'Choose a writable location, e.g. DATABASE_URL=sqlite:./data/pigeon.db, or give this user write access to the folder',
    );
  }
}

const PG_CONNECT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET']);

function codeOf(err: unknown): string | undefined {
  const e = err as { code?: string; errors?: { code?: string }[] };
  return e?.code ?? e?.errors?.[0]?.code;
}

/**
 * The problem behind an error thrown while starting, in terms of the setting at fault; null when
 * the error is not one a setting explains (a bug, to be reported with its stack).
 */
export function startupProblems(
  err: unknown,
  config: (Pick<Config, 'port' | 'host' | 'databaseUrl'> & { smppServer?: Pick<Config['smppServer'], 'port' | 'tls'> }) | null,
): ConfigProblem[] | null {
  if (err instanceof ConfigError) return err.problems;
  if (!config) return null;
  const code = codeOf(err);
  const e = err as { syscall?: string; message?: string; hostname?: string; listener?: string };
  const smpp = smppListenProblem(code, e, config);
  if (smpp) return [smpp];
  const where = `${config.host}:${config.port}`;
  if (code === 'EADDRINUSE') {
    return [{ variable: 'PORT', value: String(config.port), message: `${where} is already in use by another process`, hint: 'Stop that process (another `pigeon serve`?) or set PORT to a free port' }];
  }
  if (code === 'EACCES' && e.syscall === 'listen') {
    return [{ variable: 'PORT', value: String(config.port), message: `this user may not listen on ${where}`, hint: 'Ports below 1024 need privileges: use a higher PORT behind a reverse proxy' }];
  }
  // Listening on a name that does not resolve fails in getaddrinfo with that name as `hostname`.
  if ((code === 'EADDRNOTAVAIL' && e.syscall === 'listen') || ((code === 'ENOTFOUND' || code === 'EAI_AGAIN') && e.hostname === config.host)) {
    return [{ variable: 'HOST', value: config.host, message: 'is not an address of this machine', hint: 'Use 127.0.0.1 (this machine only), 0.0.0.0 (every interface) or one of its own addresses' }];
  }
  const database = maskUrlPassword(config.databaseUrl);
  if (config.databaseUrl.startsWith('postgres')) {
    let server = 'the server';
    try {
      const u = new URL(config.databaseUrl);
      server = `${u.hostname}:${u.port || 5432}`;
    } catch {
      // The URL was checked at load; keep the generic wording.
    }
    if (code && PG_CONNECT.has(code)) {
      return [{ variable: 'DATABASE_URL', value: database, message: `PostgreSQL at ${server} cannot be reached (${code})`, hint: 'Start PostgreSQL, or correct the host and port in DATABASE_URL' }];
    }
    if (code === '28P01' || code === '28000') {
      return [{ variable: 'DATABASE_URL', value: database, message: `PostgreSQL at ${server} refused the login: ${e.message}`, hint: 'Correct the user name and password in DATABASE_URL' }];
    }
    if (code === '3D000') {
      return [{ variable: 'DATABASE_URL', value: database, message: `PostgreSQL at ${server}: ${e.message}`, hint: 'Create the database first (createdb NAME) or correct its name in DATABASE_URL' }];
    }
    if (code && /^[0-9A-Z]{5}$/.test(code)) {
      return [{ variable: 'DATABASE_URL', value: database, message: `PostgreSQL at ${server} answered: ${e.message} (${code})`, hint: 'Check the server and the permissions of the user in DATABASE_URL' }];
    }
  }
  if (code?.startsWith('SQLITE_')) {
    return [{ variable: 'DATABASE_URL', value: database, message: `SQLite cannot use this file: ${e.message} (${code})`, hint: 'Point DATABASE_URL at a Pigeon database file this user may write' }];
  }
  return null;
}

/**
 * The SMPP listener's own port taken or forbidden (src/smpp-server marks its listen errors with
 * `listener`): named as SMPP_SERVER_PORT or SMPP_SERVER_TLS_PORT, never PORT, whose listener is
 * fine. Another SMSC simulator, Kannel or a second `pigeon serve` on this host commonly holds 2775.
 */
function smppListenProblem(
  code: string | undefined,
  e: { syscall?: string; listener?: string },
  config: Pick<Config, 'host'> & { smppServer?: Pick<Config['smppServer'], 'port' | 'tls'> },
): ConfigProblem | null {
  if (e.listener !== 'smpp' && e.listener !== 'smpp-tls') return null;
  if (code !== 'EADDRINUSE' && !(code === 'EACCES' && e.syscall === 'listen')) return null;
  const tls = e.listener === 'smpp-tls';
  const variable = tls ? 'SMPP_SERVER_TLS_PORT' : 'SMPP_SERVER_PORT';
  const port = tls ? config.smppServer?.tls?.port : config.smppServer?.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const where = `${host}:${port ?? '?'}`;
  const off = tls ? 'unset SMPP_SERVER_TLS_PORT, _CERT and _KEY to serve SMPP without TLS' : 'set SMPP_SERVER_PORT=0 to turn the SMPP listener off';
  if (code === 'EADDRINUSE') {
    return {
      variable,
      value: port === undefined ? null : String(port),
      message: `the SMPP listener cannot open ${where}: it is already in use by another process (an SMSC simulator, Kannel, another \`pigeon serve\`?)`,
      hint: `Set ${variable} to a free port (each \`serve\` on this host needs its own), stop that process, or ${off}`,
    };
  }
  return {
    variable,
    value: port === undefined ? null : String(port),
    message: `this user may not listen on ${where} for SMPP`,
    hint: `Ports below 1024 need privileges: set ${variable} to a higher port, or ${off}`,
  };
}
