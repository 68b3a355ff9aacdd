/**
 * What the worker side costs per message, without the send load around it: N messages are
 * accepted first (bulk calls, no workers running), then one process's workers (as `pigeon serve`
 * runs them: dispatch, receipts, webhooks, with the simulator reporting `delivered` after its
 * delay) carry them all to `delivered`. Prints the drain rate, the CPU per message of this
 * process and of PostgreSQL's processes (from /proc, so PostgreSQL's figure includes whatever
 * else the shared database did meanwhile), and on PostgreSQL the statements per message by kind,
 * counted at the driver.
 *
 * With `dispatch` the simulator's receipts are held back (an hour): the figures are dispatch's
 * alone, up to `sent`.
 *
 * PROFILE=file.cpuprofile writes a V8 CPU profile of the drain alone (not of the acceptance before).
 *
 *   node --import tsx bench/pipeline-drain.ts [messages=50000] [sqlite|postgres] [dispatch]
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { start } from '../src/runtime.ts';
import { countPgStatements, postgresTicks } from './lib.ts';
import { freshDatabase, prepareCustomer } from './setup.ts';

const N = Number(process.argv[2] ?? 50_000);
const STORE = process.argv[3] ?? 'postgres';
const BULK = 1000;
const UNTIL = process.argv[4] === 'dispatch' ? 'sent' : 'delivered';

const statements = STORE === 'postgres' ? countPgStatements(60, (text) => text.includes('/* bench poll */')) : { counts: new Map<string, { n: number; ms: number }>(), counting: false };


const dir = mkdtempSync(join(tmpdir(), 'pigeon-bench-'));
try {
  const fresh = await freshDatabase(STORE, dir, 'bench_drain');
  const databaseUrl = STORE === 'postgres' ? `${fresh}&application_name=bench_drain` : fresh;
  const { key } = await prepareCustomer(databaseUrl);
  const env = { DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', LOG_REQUESTS: 'false', RATE_LIMIT_MAX: '100000000', DISPATCH_BACKLOG_LIMIT: '100000000', DISPATCH_BACKLOG_ACCOUNT_SHARE: '100', PORT: '0', SMPP_SERVER_PORT: '0', HOST: '127.0.0.1', ...(UNTIL === 'sent' ? { SIM_DELIVERY_DELAY_MS: '3600000' } : {}) };
  const api = await start({ api: true, workers: false, env });
  for (let offset = 0; offset < N; offset += BULK) {
    const messages = Array.from({ length: Math.min(BULK, N - offset) }, (_, i) => {
      const n = offset + i;
      return { to: `+1415${String(n % 1000).padStart(3, '0')}${String(3000 + (n % 6000)).padStart(4, '0')}`, message: `Order ${n} is on its way.` };
    });
    const res = await api.app!.inject({ method: 'POST', url: '/v1/sms/bulk', headers: { authorization: `Bearer ${key}` }, payload: { from: 'Bench', messages } });
    if (res.statusCode !== 200) throw new Error(`bulk answered ${res.statusCode}: ${res.body}`);
  }
  await api.stop();

  const workers = await start({ api: false, workers: true, env });
  const delivered = async () =>
    Number(
      (await sql<{ n: number }>`select /* bench poll */ count(*) as n from messages where status = ${UNTIL}`.execute(workers.ctx.store.db)).rows[0]!.n,
    );
  const profiler = process.env.PROFILE ? new Session() : null;
  if (profiler) {
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.start');
  }
  const pg = STORE === 'postgres';
  const pg0 = pg ? await postgresTicks(databaseUrl, 'bench_drain') : new Map<number, number>();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  statements.counting = true;
  let done = 0;
  while ((done = await delivered()) < N) await sleep(100);
  statements.counting = false;
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  if (profiler) writeFileSync(process.env.PROFILE!, JSON.stringify((await profiler.post('Profiler.stop')).profile));
  let pgTicks = 0;
  // Backends that started during the run are counted from zero; those that ended are lost (the
  // pool keeps its connections while busy).
  if (pg) for (const [pid, t] of await postgresTicks(databaseUrl, 'bench_drain')) pgTicks += t - (pg0.get(pid) ?? 0);
  const load = loadavg();
  await workers.stop();
  console.log(`${cpus().length} cores, load average ${load.map((l) => l.toFixed(2)).join(' ')}`);
  console.log(`${done} ${UNTIL} (${STORE}) in ${wall.toFixed(1)} s: ${(done / wall).toFixed(0)} msg/s${UNTIL === 'delivered' ? " (includes the simulator's 1 s receipt delay)" : ''}`);
  console.log(
    `CPU per message: this process ${((cpu.user + cpu.system) / done).toFixed(0)} µs` + (STORE === 'postgres' ? `, PostgreSQL ${((pgTicks * 10_000) / done).toFixed(0)} µs` : ''),
  );
  if (STORE === 'postgres') {
    const rows = [...statements.counts.entries()].sort((a, b) => b[1].ms - a[1].ms);
    const total = rows.reduce((n, [, c]) => n + c.n, 0);
    const ms = rows.reduce((n, [, c]) => n + c.ms, 0);
    console.log(`${total} statements: ${(total / done).toFixed(3)} per message, ${((ms * 1000) / done).toFixed(0)} µs per message waiting for them (summed over concurrent loops)`);
    for (const [kind, c] of rows.slice(0, 25))
      console.log(`${String(c.n).padStart(8)}  ${(c.n / done).toFixed(4)}/msg  ${((c.ms * 1000) / done).toFixed(1).padStart(6)} µs/msg  ${(c.ms / c.n).toFixed(2).padStart(7)} ms each  ${kind}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
