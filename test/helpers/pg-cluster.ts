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

function asPostgres(uid: number, gid: number) {
  return process.getuid?.() === 0 ? { uid, gid } : {};
}

export async function createPgCluster(): Promise<PgCluster> {
  if (!BIN) throw new Error('PostgreSQL server binaries (/usr/lib/postgresql/*/bin) are not installed');
  const root = mkdtempSync(join(tmpdir(), 'pigeon-pg-'));
  const data = join(root, 'data');
  const logFile = join(root, 'server.log');
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
  await run('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
  const port = await freePort();
  // Sockets in the cluster's own folder; TCP on loopback only. No fsync: the machine does not crash here.
  const options = `-p ${port} -k ${root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50`;
  let running = false;
  const cluster: PgCluster = {
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
      if (running) await cluster.stop('immediate').catch(() => {});
      rmSync(root, { recursive: true, force: true });
    },
  };
  await cluster.start();
  return cluster;
}
