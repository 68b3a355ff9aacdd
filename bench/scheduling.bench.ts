/**
 * Scheduled release at scale: 100,000 messages scheduled for the same instant, then the scheduler
 * of one worker process (src/workers/scheduler.ts, default settings, a real-time clock) releases them
 * into the dispatch queue. The scheduler starts LEAD_MS before their time, as one that was running
 * when they were scheduled would be, in time to stage their dispatch jobs (STAGE_AHEAD_MS before);
 * the benchmark prints how many it staged before the first release. Lateness is, per message, the commit of the transaction that released
 * it minus its `send_at`; dispatch itself is not running (it then works at its usual rate, which
 * the throughput benchmark measures). The messages are written straight into the store (set-up,
 * not measured).
 *
 *   node --import tsx bench/scheduling.bench.ts [messages=100000] [sqlite|postgres]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../src/config/config.ts';
import type { Context } from '../src/services/context.ts';
import { openStore } from '../src/store/connect.ts';
import type { MessagesTable } from '../src/store/database.ts';
import { insertMessages } from '../src/store/repositories/messages.repository.ts';
import { newId, systemClock } from '../src/util/ids.ts';
import { Scheduler } from '../src/workers/scheduler.ts';
import { cpuTicks, figure, percentile, postgresTicks, report } from './lib.ts';
import { freshDatabase, prepareCustomer } from './setup.ts';

const TOTAL = Number(process.argv[2] ?? 100_000);
const STORE = process.argv[3] ?? 'sqlite';
// Within the staging window, and long enough for 100,000 to be staged (about 1 s on PostgreSQL here).
const LEAD_MS = 10_000;

const dir = mkdtempSync(join(tmpdir(), 'pigeon-bench-'));
try {
  const fresh = await freshDatabase(STORE, dir, 'scheduling');
  // Named, so that PostgreSQL's backends serving the release can be found for their CPU.
  const databaseUrl = STORE === 'postgres' ? `${fresh}&application_name=bench_scheduling` : fresh;
  const { accountId } = await prepareCustomer(databaseUrl);
  const store = openStore(databaseUrl);
  const setupStart = performance.now();
  // Written after the set-up, so that the release starts a few seconds later whatever its length.
  const rows: MessagesTable[] = [];
  let created = Date.now();
  for (let i = 0; i < TOTAL; i++) {
    created++;
    rows.push({
      id: newId('msg', created),
      account_id: accountId,
      batch_id: null,
      recipient: `+1415555${String(i % 10000).padStart(4, '0')}`,
      sender: 'Bench',
      body: `Reminder ${i}: your appointment is tomorrow at 9:00.`,
      encoding: 'GSM-7',
      segments: 1,
      status: 'scheduled',
      callback_url: null,
      carrier_message_id: null,
      error_code: null,
      error_message: null,
      created_at: created,
      sent_at: null,
      delivered_at: null,
      updated_at: created,
      send_at: null,
      validity_period: null,
      expires_at: null,
    });
  }
  // All due at the same instant. The scheduler's clock is set so that this instant comes LEAD_MS
  // after the set-up, however long the set-up takes.
  const sendAt = Date.now() + 3_600_000;
  for (const row of rows) row.send_at = sendAt;
  await store.db.transaction().execute(async (trx) => {
    for (let i = 0; i < rows.length; i += 10_000) await insertMessages(trx, rows.slice(i, i + 10_000));
  });
  const offset = sendAt - LEAD_MS - Date.now();
  const clock = () => systemClock() + offset;
  console.error(`# ${TOTAL} scheduled in ${Math.round(performance.now() - setupStart)} ms; due in ${sendAt - clock()} ms`);

  const lateness: number[] = [];
  let transactions = 0;
  let firstCommit = NaN;
  const ctx: Context = { store, config: loadConfig({ DATABASE_URL: databaseUrl }), clock, log: pino({ level: 'silent' }), wake: () => {} };
  const scheduler = new Scheduler(ctx, {
    onRelease: ({ committedAt, sendAts }) => {
      transactions++;
      if (Number.isNaN(firstCommit)) firstCommit = committedAt;
      for (const at of sendAts) lateness.push(committedAt - at);
    },
  });
  // CPU from here to the last release, the staging of the dispatch jobs included: this process
  // (the scheduler; the polling below is negligible) and, on PostgreSQL, the backends and its background processes (autovacuum of the
  // rows just written included: the release pays for it on a real installation too).
  const ticks0 = cpuTicks(process.pid);
  const pgTicks0 = STORE === 'postgres' ? await postgresTicks(databaseUrl, 'bench_scheduling') : new Map<number, number>();
  scheduler.start();
  while (clock() < sendAt - 20) await new Promise((r) => setTimeout(r, 10));
  const staged = await store.db.selectFrom('jobs').select((eb) => eb.fn.countAll<number>().as('n')).where('queue', '=', 'dispatch').executeTakeFirstOrThrow();
  console.error(`# ${staged.n} dispatch jobs staged before send_at`);
  const deadline = Date.now() + LEAD_MS + 60_000;
  while (lateness.length < TOTAL && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const ticks = cpuTicks(process.pid) - ticks0;
  let pgTicks = 0;
  if (STORE === 'postgres') for (const [pid, t] of await postgresTicks(databaseUrl, 'bench_scheduling')) pgTicks += t - (pgTicks0.get(pid) ?? 0);
  await scheduler.stop();
  lateness.sort((a, b) => a - b);
  const seconds = Math.max(1, lateness.at(-1)! - (firstCommit - sendAt)) / 1000;
  console.error(`# ${lateness.length} released in ${transactions} transactions; first commit ${firstCommit - sendAt} ms after send_at`);
  report([
    figure(`scheduled release (${STORE}) messages released`, lateness.length, 'msgs'),
    // Released within 2 s of send_at on either database (DECISIONS.md §8), unlike the throughput
    // targets, which are the embedded store's.
    figure(`scheduled release (${STORE}) lateness p50`, percentile(lateness, 50), 'ms', { max: 2000 }),
    figure(`scheduled release (${STORE}) lateness p99`, percentile(lateness, 99), 'ms', { max: 2000 }),
    figure(`scheduled release (${STORE}) release rate`, lateness.length / seconds, 'msg/s'),
    // Clock ticks are 10 ms: µs per message = ticks × 10,000 / messages.
    figure(`scheduled release (${STORE}) CPU per message, scheduler process`, (ticks * 10_000) / Math.max(1, lateness.length), 'µs'),
    ...(STORE === 'postgres' ? [figure(`scheduled release (${STORE}) CPU per message, PostgreSQL`, (pgTicks * 10_000) / Math.max(1, lateness.length), 'µs')] : []),
  ]);
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
