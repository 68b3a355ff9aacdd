/**
 * `npm run soak`: the default `pigeon serve` (SQLite, carrier simulator, workers in process) under
 * a steady rate of sends for an hour, printing every minute what would show a leak or a drift:
 * the server's RSS and open file descriptors (sockets apart), the size of the store, the dispatch backlog, and the
 * minute's p99 and answers. All should be flat after the first minutes. Not part of CI.
 *
 *   npm run soak                          60 minutes at 200 sends/s on SQLite
 *   npm run soak -- --minutes=5 --rate=100
 *   npm run soak -- --store=postgres      a fresh schema of the local PostgreSQL test database
 */
import { readdirSync, readFileSync, readlinkSync, statSync, mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { openStore } from '../src/store/connect.ts';
import { freePort, startPigeon } from '../test/helpers/processes.ts';
import { freshDatabase, prepareCustomer } from './setup.ts';

const arg = (name: string, fallback: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const MINUTES = Number(arg('minutes', '60'));
const RATE = Number(arg('rate', '200'));
const STORE = arg('store', 'sqlite');
/** Sends go out in ticks of this many milliseconds, RATE spread over them. */
const TICK_MS = 50;

function rssMiB(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  return Math.round(kb / 1024);
}

/** Open descriptors: sockets (the clients' connections among them, which follow the load) and the rest. */
function descriptors(pid: number): { sockets: number; files: number } {
  let sockets = 0;
  let files = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) sockets++;
      else files++;
    } catch {
      // closed meanwhile
    }
  }
  return { sockets, files };
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
}

const dir = mkdtempSync(join(tmpdir(), 'pigeon-soak-'));
try {
  const databaseUrl = await freshDatabase(STORE, dir, 'soak');
  const { key } = await prepareCustomer(databaseUrl);
  const port = await freePort();
  const server = await startPigeon(['serve'], { DATABASE_URL: databaseUrl, PORT: String(port), SMPP_SERVER_PORT: '0', RATE_LIMIT_MAX: '100000000', LOG_REQUESTS: 'false' });
  const pid = server.child.pid!;
  const store = openStore(databaseUrl);
  const storeBytes = async (): Promise<number> => {
    if (STORE === 'postgres') return Number((await sql<{ n: string }>`select pg_database_size(current_database()) as n`.execute(store.db)).rows[0]!.n);
    const file = databaseUrl.slice('sqlite:'.length);
    return ['', '-wal', '-shm'].reduce((n, suffix) => n + (existsSync(file + suffix) ? statSync(file + suffix).size : 0), 0);
  };
  const backlog = async () =>
    Number((await store.db.selectFrom('jobs').select((eb) => eb.fn.countAll<number>().as('n')).where('queue', '=', 'dispatch').executeTakeFirstOrThrow()).n);

  let latencies: number[] = [];
  let errors = 0;
  let n = 0;
  const send = async () => {
    const started = performance.now();
    try {
      const res = await fetch(`http://127.0.0.1:${port}/v1/sms/send`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ to: `+1415555${String(3000 + (n++ % 997)).padStart(4, '0')}`, from: 'Bench', message: 'Your code is 123456' }),
      });
      await res.arrayBuffer();
      if (res.status !== 200) errors++;
    } catch {
      errors++;
    }
    latencies.push(performance.now() - started);
  };
  // Open loop: the rate is kept whatever the answers' speed, as real clients keep sending; what is
  // owed follows the clock, not the ticks, which a busy machine delays.
  const began = performance.now();
  let issued = 0;
  const ticker = setInterval(() => {
    const owed = Math.floor(((performance.now() - began) * RATE) / 1000);
    for (; issued < owed; issued++) void send();
  }, TICK_MS);

  console.log(`# soak: ${MINUTES} min at ${RATE} sends/s on ${STORE}, pigeon serve pid ${pid}`);
  console.log('minute  sent/s  errors  p50 ms  p99 ms  rss MiB  sockets  files  store MiB  backlog');
  for (let minute = 1; minute <= MINUTES; minute++) {
    await new Promise((resolve) => setTimeout(resolve, 60_000));
    const sorted = latencies.sort((a, b) => a - b);
    const fds = descriptors(pid);
    latencies = [];
    const line = [
      String(minute).padStart(6),
      (sorted.length / 60).toFixed(0).padStart(6),
      String(errors).padStart(6),
      percentile(sorted, 50).toFixed(1).padStart(6),
      percentile(sorted, 99).toFixed(1).padStart(6),
      String(rssMiB(pid)).padStart(7),
      String(fds.sockets).padStart(7),
      String(fds.files).padStart(5),
      ((await storeBytes()) / 2 ** 20).toFixed(1).padStart(9),
      String(await backlog()).padStart(7),
    ];
    errors = 0;
    console.log(line.join('  '));
  }
  clearInterval(ticker);
  await store.close();
  await server.stop();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
