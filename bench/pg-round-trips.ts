/**
 * Where a PostgreSQL send's time goes, counted rather than timed: the statements (round trips)
 * the server makes per accepted message, by kind, under concurrent sends through the real HTTP
 * stack (in-process, `app.inject`), and their time as the driver sees it (round trip included),
 * counted and timed on the client side since a default install does not load
 * `pg_stat_statements`; bench/pg-statements.ts gives PostgreSQL's own account where it is loaded.
 *
 *   node --import tsx bench/pg-round-trips.ts [sends] [concurrency] [keyed|bulk]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../src/config/config.ts';
import { buildApp } from '../src/http/app.ts';
import { SimulatorCarrier } from '../src/carriers/simulator/simulator-carrier.ts';
import { openStore } from '../src/store/connect.ts';
import { systemClock } from '../src/util/ids.ts';
import { countPgStatements } from './lib.ts';
import { freshDatabase, prepareCustomer } from './setup.ts';

const SENDS = Number(process.argv[2] ?? 2000);
const CONCURRENCY = Number(process.argv[3] ?? 64);

const statements = countPgStatements(48);

const dir = mkdtempSync(join(tmpdir(), 'pigeon-bench-'));
const databaseUrl = await freshDatabase('postgres', dir, 'bench_rt');
const { key } = await prepareCustomer(databaseUrl);
const store = openStore(databaseUrl);
const config = loadConfig({ DATABASE_URL: databaseUrl, RATE_LIMIT_MAX: '100000000', DISPATCH_BACKLOG_LIMIT: '100000000', LOG_REQUESTS: 'false' });
const ctx = { store, config, clock: systemClock, log: pino({ level: 'silent' }), wake: () => {} };
const app = await buildApp({ ctx, carrier: new SimulatorCarrier(1000, systemClock, true) });
const body = { to: '+14155552671', from: 'Bench', message: 'Your code is 123456' };
// `keyed`: every send carries its own Idempotency-Key.
let keys = 0;
const keyed = process.argv[4] === 'keyed';
const send = () =>
  app.inject({ method: 'POST', url: '/v1/sms/send', headers: { authorization: `Bearer ${key}`, ...(keyed ? { 'idempotency-key': `k${keys++}` } : {}) }, payload: body });
for (let i = 0; i < 200; i++) await send(); // warm-up: caches, compiled paths
if (process.argv[4] === 'bulk') {
  // One bulk of 10,000: the statements' share of its time.
  const messages = (offset: number) =>
    Array.from({ length: 10_000 }, (_, i) => ({ to: `+1415${String((offset + i) % 1000).padStart(3, '0')}${String(3000 + ((offset + i) % 7000)).padStart(4, '0')}`, message: `Hello customer ${offset + i}, your parcel arrives tomorrow.` }));
  const bulk = (offset: number) => app.inject({ method: 'POST', url: '/v1/sms/bulk', headers: { authorization: `Bearer ${key}` }, payload: { from: 'Bench', messages: messages(offset) } });
  await bulk(1_000_000);
  for (let round = 0; round < 3; round++) {
    statements.counting = true;
    const t = performance.now();
    const res = await bulk(round * 10_000);
    const ms = performance.now() - t;
    statements.counting = false;
    const db = [...statements.counts.values()].reduce((n, c) => n + c.ms, 0);
    console.log(`bulk of 10,000: ${res.statusCode} in ${ms.toFixed(0)} ms, of which ${db.toFixed(0)} ms in ${[...statements.counts.values()].reduce((n, c) => n + c.n, 0)} statements`);
    statements.counts.clear();
  }
  await app.close();
  await store.close();
  process.exit(0);
}
statements.counting = true;
const cpu0 = process.cpuUsage();
const t0 = performance.now();
let next = 0;
let ok = 0;
await Promise.all(
  Array.from({ length: CONCURRENCY }, async () => {
    while (next < SENDS) {
      next++;
      if ((await send()).statusCode === 200) ok++;
    }
  }),
);
const wall = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
statements.counting = false;
let total = 0;
const rows = [...statements.counts.entries()].sort((a, b) => b[1].n - a[1].n);
for (const [, c] of rows) total += c.n;
console.log(`${ok} sends accepted of ${SENDS}, ${CONCURRENCY} at a time, in ${wall.toFixed(0)} ms (${((ok / wall) * 1000).toFixed(0)}/s in-process, ${((cpu.user + cpu.system) / ok).toFixed(0)} µs CPU per send)`);
console.log(`${total} statements: ${(total / ok).toFixed(3)} per send`);
for (const [kind, c] of rows) console.log(`${String(c.n).padStart(7)}  ${(c.n / ok).toFixed(3)}/send  ${(c.ms / c.n).toFixed(2)} ms each  ${kind}`);
await app.close();
await store.close();
rmSync(dir, { recursive: true, force: true });
