/**
 * Ceiling and send: a bare Fastify route (the machine's HTTP limit), then `POST /v1/sms/send`
 * through a real `pigeon serve` (auth, validation, credit debit, storage, dispatch), each under
 * 64 connections for 20 s from a separate autocannon process. Prints requests/s, p50/p99 and the
 * server's peak RSS.
 *
 *   node --import tsx bench/http.bench.ts [seconds] [sqlite|postgres]
 *   SQLITE_SYNCHRONOUS=full node --import tsx bench/http.bench.ts [seconds] sqlite
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startPigeon } from '../test/helpers/processes.ts';
import { figure, load, report, sampleRss, targetsFor, type Figure } from './lib.ts';
import { freshDatabase, prepareCustomer } from './setup.ts';

const SECONDS = Number(process.argv[2] ?? 20);
/** `sqlite`, `sqlite, synchronous=full` (SQLITE_SYNCHRONOUS=full, which the server inherits) or `postgres`. */
const STORE = (process.argv[3] ?? 'sqlite') === 'sqlite' && process.env.SQLITE_SYNCHRONOUS === 'full' ? 'sqlite, synchronous=full' : (process.argv[3] ?? 'sqlite');
const CONNECTIONS = 64;
// The targets are for the default; the synced variant is measured for its cost against it.
const target: ReturnType<typeof targetsFor> = STORE === 'sqlite, synchronous=full' ? () => undefined : targetsFor(STORE);

async function ceiling(): Promise<number> {
  const port = await freePort();
  const server = spawn(process.execPath, ['--import', 'tsx', 'bench/ceiling-server.ts', String(port)], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve) => server.stdout!.once('data', () => resolve()));
  const r = await load(`http://127.0.0.1:${port}/ping`, { connections: CONNECTIONS, seconds: SECONDS });
  server.kill();
  return r.requestsPerSecond;
}

async function send(databaseUrl: string): Promise<Figure[]> {
  const { key } = await prepareCustomer(databaseUrl);
  const port = await freePort();
  // Acceptance only: the dispatch pipeline has its own figure (bench/throughput.bench.ts).
  const server = await startPigeon(['serve', '--no-workers'], {
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    SMPP_SERVER_PORT: '0',
    RATE_LIMIT_MAX: '100000000',
    // Without workers nothing drains the dispatch queue; the limit must not turn sends into 503s.
    DISPATCH_BACKLOG_LIMIT: '100000000',
  });
  const rss = sampleRss(server.child.pid!);
  const r = await load(`http://127.0.0.1:${port}/v1/sms/send`, {
    connections: CONNECTIONS,
    seconds: SECONDS,
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ to: '+14155552671', from: 'Bench', message: 'Your code is 123456' }),
  });
  const peak = rss.stop();
  await server.stop();
  return [
    figure(`send (${STORE}) requests/s`, r.requestsPerSecond, 'req/s', target({ min: 10_000 })),
    figure(`send (${STORE}) p50`, r.p50, 'ms'),
    figure(`send (${STORE}) p99`, r.p99, 'ms', target({ max: 25 }, { max: 40 })),
    figure(`send (${STORE}) peak RSS`, peak, 'MiB', target({ max: 300 })),
  ];
}

const dir = mkdtempSync(join(tmpdir(), 'pigeon-bench-'));
try {
  const top = await ceiling();
  const databaseUrl = await freshDatabase(STORE.startsWith('sqlite') ? 'sqlite' : STORE, dir);
  const figures = await send(databaseUrl);
  const rate = figures[0]!.value;
  report([figure('ceiling (bare Fastify) requests/s', top, 'req/s'), ...figures, figure(`send (${STORE}) / ceiling`, (rate / top) * 100, '%', target({ min: 12 }))]);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

