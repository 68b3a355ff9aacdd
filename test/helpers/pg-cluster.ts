/**
 * A throwaway PostgreSQL 15 cluster for the fault tests (test/faults/): its own data folder and
 * port on 127.0.0.1, so that a test may stop, crash and restart it without touching the
 * machine's own server. PostgreSQL refuses to run as root, so the cluster runs as the `postgres`
 * OS user when the test runs as root.
 */
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './processes.ts';

const BIN = ['/usr/lib/postgresql/15/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/17/bin'].find((d) => existsSync(join(d, 'pg_ctl')));

/** Whether this machine can run a throwaway cluster (a test skips itself otherwise). */
export const pgClusterAvailable = BIN !== undefined;

export interface PgCluster {
  port: number;
  /** A URL of the cluster's `postgres` database, as the superuser, over TCP on 127.0.0.1. */
  url: string;
  start(): Promise<void>;
  /** `fast` ends sessions cleanly; `immediate` kills the server as a crash would (recovery on start). */
  stop(mode: 'fast' | 'immediate'): Promise<void>;
  /** Its server log, for diagnostics. */
  log(): string;
  /** Stops it if running and removes its folder. */
  destroy(): Promise<void>;
}

export interface PgStandby extends PgCluster {
  /** Ends recovery: the standby becomes a primary that takes writes (`pg_ctl promote`). */
  promote(): Promise<void>;
}

function asPostgres(uid: number, gid: number) {
  return process.getuid?.() === 0 ? { uid, gid } : {};
}

/** A folder owned by the `postgres` OS user when running as root, and how to run a server binary in it. */
function clusterFolder() {
  if (!BIN) throw new Error('PostgreSQL server binaries (/usr/lib/postgresql/*/bin) are not installed');
  const root = mkdtempSync(join(tmpdir(), 'pigeon-pg-'));
  let ids = {};
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(root, uid, gid);
    ids = asPostgres(uid, gid);
  }
  chmodSync(root, 0o700);
  // Asynchronous, so that the test's own clients go on sending while the server stops or starts.
  const run = (program: string, args: string[]) => promisify(execFile)(join(BIN!, program), args, { ...ids, cwd: root, timeout: 60_000 });
  return { root, data: join(root, 'data'), run };
}

export async function createPgCluster(): Promise<PgCluster> {
  const { root, data, run } = clusterFolder();
  await run('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
  return startCluster(root, data, run, (cluster) => cluster);
}

/**
 * A streaming replica of `primary` (which must run), copied with `pg_basebackup` and started in
 * hot standby on a port of its own: read-only until promoted.
 */
export async function createPgStandby(primary: PgCluster): Promise<PgStandby> {
  const { root, data, run } = clusterFolder();
  await run('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', data, '-R', '-X', 'stream', '--no-sync']);
  return startCluster(root, data, run, (cluster) => ({
    ...cluster,
    async promote() {
      await run('pg_ctl', ['-D', data, '-w', '-t', '60', 'promote']);
    },
  }));
}

async function startCluster<T extends PgCluster>(
  root: string,
  data: string,
  run: (program: string, args: string[]) => Promise<unknown>,
  finish: (cluster: PgCluster) => T,
): Promise<T> {
  const logFile = join(root, 'server.log');
  const port = await freePort();
  // Sockets in the cluster's own folder; TCP on loopback only. No fsync: the machine does not crash here.
  const options = `-p ${port} -k ${root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50`;
  let running = false;
  const base: PgCluster = {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async start() {
      await run('pg_ctl', ['-D', data, '-l', logFile, '-o', options, '-w', '-t', '60', 'start']);
      running = true;
    },
    async stop(mode) {
      await run('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']);
      running = false;
    },
    log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
    async destroy() {
      if (running) await base.stop('immediate').catch(() => {});
      rmSync(root, { recursive: true, force: true });
    },
  };
  await base.start();
  return finish(base);
}
