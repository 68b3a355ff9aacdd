/**
 * Webhook delivery throughput: events delivered per second by one `pigeon worker` process to a
 * local HTTPS receiver, and the same while a second receiver hangs on every request.
 *
 *   node --import tsx bench/webhooks.bench.ts
 *
 * Three processes on 127.0.0.1: this one (seeds a throwaway SQLite database and watches it), the
 * receivers (a child: this file with --receivers), and the worker (`./bin/pigeon worker`, trusting
 * the test CA through NODE_EXTRA_CA_CERTS). The last stdout line is the JSON of the figures.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAccount } from '../src/services/accounts/accounts.ts';
import type { Context } from '../src/services/context.ts';
import { openStore, type Store } from '../src/store/connect.ts';
import { migrateToLatest } from '../src/store/migrate.ts';
import { newId } from '../src/util/ids.ts';
import { figure } from './lib.ts';
import { insertRows } from '../src/store/insert-rows.ts';
import type { JobsTable, WebhookEventsTable } from '../src/store/database.ts';
import { makeTestCa } from '../test/api/webhooks-receiver.ts';
import { serviceContext } from '../test/helpers/test-store.ts';

const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 20_000);
const HANGING_EVENTS = Math.round(EVENTS / 10);
const SCENARIO_LIMIT_MS = 20_000;

if (process.argv.includes('--receivers')) {
  // Child mode: a fast receiver and one that never answers; prints their ports.
  const tls = { key: process.env.BENCH_KEY!, cert: process.env.BENCH_CERT! };
  const fast = https.createServer({ ...tls, keepAliveTimeout: 10_000 }, (req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'));
  });
  const hanging = https.createServer(tls, (req) => req.resume());
  await new Promise<void>((r) => fast.listen(0, '127.0.0.1', r));
  await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', r));
  const port = (s: https.Server) => (s.address() as { port: number }).port;
  process.stdout.write(`${JSON.stringify({ fast: port(fast), hanging: port(hanging) })}\n`);
} else {
  await main();
}

async function seed(store: Store, ctx: Context, targets: { url: string; count: number }[]): Promise<void> {
  const account = await createAccount(ctx, { name: 'Bench', email: 'bench@example.com', credits: 0 });
  const now = Date.now();
  const events: WebhookEventsTable[] = [];
  const jobs: JobsTable[] = [];
  // Interleaved, as events of many customers are: one of every `total / count` goes to each target.
  const order = targets.flatMap(({ url, count }) => Array.from({ length: count }, (_, i) => ({ url, key: (i + 0.5) / count })));
  order.sort((a, b) => a.key - b.key);
  {
    for (const { url } of order) {
      const id = newId('evt', now);
      const messageId = newId('msg', now);
      const payload = JSON.stringify({
        event: 'sms.delivered',
        message_id: messageId,
        batch_id: null,
        to: '+447911123456',
        from: 'Acme',
        status: 'delivered',
        delivered_at: new Date(now).toISOString(),
        sent_at: new Date(now - 1000).toISOString(),
        timestamp: new Date(now).toISOString(),
      });
      events.push({ id, account_id: account.id, message_id: messageId, batch_id: null, event: 'sms.delivered', url, payload, status: 'pending' as const, attempts: 0, last_error: null, created_at: now, updated_at: now });
      jobs.push({ id: newId('job', now), queue: 'webhook' as const, account_id: null, ref: id, payload: null, run_at: now, attempts: 0, created_at: now });
    }
  }
  await store.db.transaction().execute(async (trx) => {
    await insertRows(trx, 'webhook_events', events);
    await insertRows(trx, 'jobs', jobs);
  });
}

async function scenario(name: string, ca: { caFile: string }, dir: string, targets: { url: string; count: number }[], measured: string): Promise<number> {
  const databaseUrl = `sqlite:${join(dir, `${name}.db`)}`;
  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    NODE_EXTRA_CA_CERTS: ca.caFile,
    WEBHOOK_ALLOW_PRIVATE: 'true',
    LOG_LEVEL: 'warn',
  };
  const store = openStore(databaseUrl);
  await migrateToLatest(store.db);
  const ctx = serviceContext(store, env);
  await seed(store, ctx, targets);
  const total = targets.find((t) => t.url === measured)!.count;
  const delivered = async () =>
    Number(
      (
        await store.db
          .selectFrom('webhook_events')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('status', '=', 'delivered')
          .where('url', '=', measured)
          .executeTakeFirstOrThrow()
      ).n,
    );
  // BENCH_CPU_PROF=<dir> writes a CPU profile of the worker there.
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const worker = spawn(process.execPath, [...prof, 'bin/pigeon', 'worker'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  let first = 0;
  let start = 0;
  const deadline = Date.now() + SCENARIO_LIMIT_MS;
  let n = 0;
  // The clock starts at the first delivery, so the worker's start-up (tsx compiling) is not counted.
  for (;;) {
    n = await delivered();
    if (n > 0 && start === 0) {
      start = Date.now();
      first = n;
    }
    if (n >= total || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, start === 0 ? 20 : 100));
  }
  const elapsed = (Date.now() - start) / 1000;
  const cpu = cpuSeconds(worker.pid!);
  await stop(worker);
  await store.close();
  const rate = Math.round((n - first) / elapsed);
  process.stderr.write(`${name}: ${n}/${total} delivered to the measured receiver, ${rate} events/s; worker CPU ${cpu.toFixed(1)} s in all\n`);
  return rate;
}

/** User plus system CPU time of a process so far (Linux), to tell a slow worker from a busy machine. */
function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

async function main(): Promise<void> {
  const ca = makeTestCa();
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-bench-webhooks-'));
  const receivers = spawn(process.execPath, ['--import', 'tsx', 'bench/webhooks.bench.ts', '--receivers'], {
    env: { ...process.env, BENCH_KEY: ca.key, BENCH_CERT: ca.cert },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const ports = await new Promise<{ fast: number; hanging: number }>((resolve, reject) => {
      let out = '';
      receivers.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]!));
      });
      receivers.once('exit', () => reject(new Error('the receivers exited')));
    });
    const fast = `https://localhost:${ports.fast}/hook`;
    const hanging = `https://127.0.0.1:${ports.hanging}/hook`;
    const alone = await scenario('alone', ca, dir, [{ url: fast, count: EVENTS }], fast);
    const withHang = await scenario('hanging', ca, dir, [{ url: hanging, count: HANGING_EVENTS }, { url: fast, count: EVENTS }], fast);
    console.log(
      JSON.stringify({
        figures: [
          figure('webhook deliveries/s', alone, 'events/s', { min: 2000 }),
          figure('webhook deliveries/s while another receiver hangs', withHang, 'events/s', { min: 2000 }),
        ],
      }),
    );
  } finally {
    receivers.kill('SIGTERM');
    ca.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
}
