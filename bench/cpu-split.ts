/**
 * Where the machine's CPU goes during a send load: the server process, PostgreSQL's backends
 * and the load generator, read from /proc before and after (clock ticks), with the server's
 * requests per second. PROFILE=dir also writes a V8 CPU profile of the server (--cpu-prof).
 *
 *   node --import tsx bench/cpu-split.ts [seconds] [sqlite|postgres]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { freePort } from '../test/helpers/processes.ts';
import { cpuTicks, load } from './lib.ts';
import { freshDatabase, prepareCustomer } from './setup.ts';

const SECONDS = Number(process.argv[2] ?? 5);
const STORE = process.argv[3] ?? 'postgres';

function postgresPids(): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('postgres');
      } catch {
        return false;
      }
    });
}
const total = (pids: number[]) => pids.reduce((n, p) => n + cpuTicks(p), 0);

const dir = mkdtempSync(join(tmpdir(), 'pigeon-bench-'));
try {
  const databaseUrl = await freshDatabase(STORE, dir, 'bench_cpu');
  const { key } = await prepareCustomer(databaseUrl);
  const port = await freePort();
  const profile = process.env.PROFILE;
  const child = spawn(process.execPath, [...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : []), 'bin/pigeon', 'serve', '--no-workers'], {
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), SMPP_SERVER_PORT: '0', RATE_LIMIT_MAX: '100000000', DISPATCH_BACKLOG_LIMIT: '100000000' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve) => {
    // Searched only until the banner: the server logs a line per request, and rescanning the
    // growing output would load this process (and so the machine) more than the server does.
    let out = '';
    const onData = (c: Buffer) => {
      out += c.toString();
      if (out.includes('pigeon started')) {
        child.stdout!.off('data', onData);
        child.stdout!.resume();
        resolve();
      }
    };
    child.stdout!.on('data', onData);
  });
  const pid = child.pid!;
  const pgPids = postgresPids();
  const s0 = cpuTicks(pid);
  const p0 = total(pgPids);
  const all0 = execFileSync('cat', ['/proc/stat']).toString().split('\n')[0]!.split(/\s+/).slice(1).map(Number);
  const r = await load(`http://127.0.0.1:${port}/v1/sms/send`, {
    connections: 64,
    seconds: SECONDS,
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ to: '+14155552671', from: 'Bench', message: 'Your code is 123456' }),
  });
  const s1 = cpuTicks(pid);
  const p1 = total(postgresPids());
  const all1 = execFileSync('cat', ['/proc/stat']).toString().split('\n')[0]!.split(/\s+/).slice(1).map(Number);
  await new Promise((resolve) => {
    child.once('exit', resolve);
    child.kill('SIGTERM');
  });
  const busy = (a: number[]) => a.reduce((x, y) => x + y, 0) - a[3]! - a[4]!;
  const sent = r.requestsPerSecond * SECONDS;
  const us = (t: number) => ((t * 10_000) / sent).toFixed(0);
  console.log(`${cpus().length} cores, load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  console.log(`send (${STORE}): ${r.requestsPerSecond.toFixed(0)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms`);
  console.log(`CPU per send: server ${us(s1 - s0)} µs, PostgreSQL ${us(p1 - p0)} µs, whole machine ${us(busy(all1) - busy(all0))} µs`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
