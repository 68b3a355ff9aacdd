/**
 * Retention (DECISIONS.md §13, docs/privacy.md) on the embedded SQLite store:
 *
 * 1. Bytes stored per message in full (the row, its indexes, its carrier part id, and with a
 *    callback its two webhook events and their attempts), per table and index from SQLite's
 *    `dbstat`, then per message once the text is purged.
 * 2. Send p99 during a purge against quiet, interleaved round by round: a real
 *    `pigeon serve --no-workers` takes sends from autocannon while this process purges a slice
 *    of the old messages (as `pigeon retention run` or a worker process would), then rests.
 * 3. The file under steady traffic with retention on: a day of messages written, the purge run,
 *    day after day; the file's pages and free pages each day.
 * 4. The cost on the send path of the index by recipient that erasures use
 *    (`messages_account_recipient`): sends with and without it, interleaved.
 *
 *   node --import tsx bench/retention.bench.ts [old messages, 200000] [rounds, 6]
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { sql } from 'kysely';
import { freePort, startPigeon } from '../test/helpers/processes.ts';
import { serviceContext } from '../test/helpers/test-store.ts';
import { webhookPayload } from '../src/services/messages/message-status-changes.ts';
import { setAccountRetention } from '../src/services/retention/account-retention.ts';
import { runPurge } from '../src/services/retention/purge.ts';
import { openStore, type Store } from '../src/store/connect.ts';
import type { MessagesTable } from '../src/store/database.ts';
import { insertRows } from '../src/store/insert-rows.ts';
import { newId } from '../src/util/ids.ts';
import { figure, load, median, report, type Figure } from './lib.ts';
import { prepareCustomer } from './setup.ts';

const COUNT = Number(process.argv[2] ?? 200_000);
const ROUNDS = Number(process.argv[3] ?? 6);
/** BENCH_PARTS=1,2 runs only those parts (3 and 4 need a server, which part 2 starts). */
const PARTS = new Set((process.env.BENCH_PARTS ?? '1,2,3,4').split(','));
const DAY = 24 * 3_600_000;
const TEXT = 'Your parcel 4711 arrives tomorrow between 9 and 11. Reply STOP to opt out.'; // 75 characters

/** Writes `n` delivered messages created from `from` on, `spacing` ms apart, as sends leave them. */
async function writeMessages(store: Store, accountId: string, n: number, from: number, spacing: number, withEvents: boolean): Promise<void> {
  for (let start = 0; start < n; start += 2000) {
    const messages: MessagesTable[] = [];
    const parts: Record<string, unknown>[] = [];
    const events: Record<string, unknown>[] = [];
    const attempts: Record<string, unknown>[] = [];
    for (let i = start; i < Math.min(n, start + 2000); i++) {
      const at = from + i * spacing;
      const id = newId('msg', at);
      const carrierId = crypto.randomUUID();
      const m: MessagesTable = {
        id,
        account_id: accountId,
        batch_id: null,
        recipient: `+4477009${String(i % 100_000).padStart(5, '0')}`,
        sender: 'Bench',
        body: TEXT,
        encoding: 'GSM-7',
        segments: 1,
        status: 'delivered',
        callback_url: withEvents ? 'https://hooks.example.com/pigeon' : null,
        carrier_message_id: carrierId,
        error_code: null,
        error_message: null,
        created_at: at,
        sent_at: at + 200,
        delivered_at: at + 3000,
        updated_at: at + 3000,
        send_at: null,
        validity_period: null,
        expires_at: null,
        charged: 1,
      };
      messages.push(m);
      parts.push({ message_id: id, part_index: 0, carrier_id: carrierId, part_key: carrierId.toLowerCase(), part_alt: null, created_at: at + 200 });
      if (withEvents) {
        for (const status of ['sent', 'delivered'] as const) {
          const eventId = newId('evt', at);
          const payload = JSON.stringify(webhookPayload({ ...m, status }, at + 3000));
          events.push({ id: eventId, account_id: accountId, message_id: id, inbound_id: null, batch_id: null, event: `sms.${status}`, url: m.callback_url, payload, status: 'delivered', attempts: 1, last_error: null, created_at: at, updated_at: at });
          attempts.push({ id: newId('att', at), event_id: eventId, attempt: 1, attempted_at: at + 3100, http_status: 200, error: null, latency_ms: 42 });
        }
      }
    }
    await store.db.transaction().execute(async (trx) => {
      await insertRows(trx, 'messages', messages);
      await insertRows(trx, 'carrier_parts', parts);
      if (withEvents) {
        await insertRows(trx, 'webhook_events', events);
        await insertRows(trx, 'webhook_attempts', attempts);
      }
    });
  }
}

/**
 * Bytes in use, from `dbstat` (pages minus their unused bytes): under each table's name with all
 * its indexes (the primary key's included), and under `index:NAME` for each index alone.
 */
function usedBytes(file: string): Map<string, number> {
  const db = new Database(file, { readonly: true });
  try {
    const owner = new Map((db.prepare("select name, tbl_name from sqlite_schema where type in ('table','index')").all() as { name: string; tbl_name: string }[]).map((r) => [r.name, r.tbl_name]));
    const rows = db.prepare('select name, sum(pgsize - unused) as used from dbstat group by name').all() as { name: string; used: number }[];
    const out = new Map<string, number>();
    for (const r of rows) {
      const table = owner.get(r.name) ?? r.name;
      out.set(table, (out.get(table) ?? 0) + r.used);
      if (table !== r.name) out.set(`index:${r.name}`, r.used);
      else out.set(`rows:${r.name}`, r.used);
    }
    return out;
  } finally {
    db.close();
  }
}

function pages(file: string): { pages: number; free: number; bytes: number } {
  const db = new Database(file, { readonly: true });
  try {
    const pageCount = Number(db.pragma('page_count', { simple: true }));
    const free = Number(db.pragma('freelist_count', { simple: true }));
    const size = Number(db.pragma('page_size', { simple: true }));
    return { pages: pageCount, free, bytes: pageCount * size };
  } finally {
    db.close();
  }
}


const dir = mkdtempSync(join(tmpdir(), 'pigeon-bench-retention-'));
const file = join(dir, 'bench.db');
const databaseUrl = `sqlite:${file}`;
const figures: Figure[] = [];
try {
  const { accountId, key } = await prepareCustomer(databaseUrl);
  const store = openStore(databaseUrl);
  const real = serviceContext(store, { DATABASE_URL: databaseUrl });
  const at = (ms: number) => ({ ...real, clock: () => ms });
  const now = Date.now();

  // 1. Size per message. The old messages: COUNT over 100 days, 300 to 200 days ago, with webhooks.
  const oldFrom = now - 300 * DAY;
  const spacing = Math.floor((100 * DAY) / COUNT);
  let t = performance.now();
  const before = usedBytes(file);
  await writeMessages(store, accountId, COUNT, oldFrom, spacing, true);
  const written = performance.now() - t;
  const full = usedBytes(file);
  const grew = (name: string) => ((full.get(name) ?? 0) - (before.get(name) ?? 0)) / COUNT;
  const perMessage = grew('messages') + grew('carrier_parts');
  const perWebhooks = grew('webhook_events') + grew('webhook_attempts');
  console.error(`# wrote ${COUNT} messages with 2 events each in ${(written / 1000).toFixed(1)} s`);
  for (const name of [...full.keys()].filter((k) => k.includes(':')).sort()) {
    if (grew(name) >= 1) console.error(`#   ${name}: ${grew(name).toFixed(0)} bytes per message`);
  }
  figures.push(figure('stored per message, in full (row, indexes, carrier part id)', perMessage, 'bytes', { max: 1024 }));
  figures.push(figure('of which the message row alone', grew('rows:messages'), 'bytes'));
  figures.push(figure('stored per message: its two webhook events and attempts, when it has a callback', perWebhooks, 'bytes'));

  await setAccountRetention(at(now), accountId, { bodyDays: 0 });
  t = performance.now();
  const bodies = await runPurge(at(now));
  const bodyPurge = (performance.now() - t) / 1000;
  const purged = usedBytes(file);
  const after = (name: string) => ((purged.get(name) ?? 0) - (before.get(name) ?? 0)) / COUNT;
  figures.push(figure('stored per message after its text is purged', after('messages') + after('carrier_parts'), 'bytes'));
  figures.push(figure('text purge rate', bodies.bodies_removed / bodyPurge, 'messages/s'));

  // 2. Send p99 quiet and during a purge, interleaved; each purge window deletes a slice of the old messages.
  const port = await freePort();
  const server = await startPigeon(['serve', '--no-workers'], { DATABASE_URL: databaseUrl, PORT: String(port), SMPP_SERVER_PORT: '0', RATE_LIMIT_MAX: '100000000', DISPATCH_BACKLOG_LIMIT: '100000000' });
  const sendLoad = (seconds: number) =>
    load(`http://127.0.0.1:${port}/v1/sms/send`, {
      connections: 16,
      seconds,
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ to: '+14155552671', from: 'Bench', message: 'Your code is 123456' }),
    });
  await sendLoad(2); // warm-up
  await setAccountRetention(at(now), accountId, { messageDays: 0 });
  const quiet: number[] = [];
  const busy: number[] = [];
  let deleted = 0;
  let purgeSeconds = 0;
  for (let round = 0; round < ROUNDS; round++) {
    quiet.push((await sendLoad(4)).p99);
    const cutoff = oldFrom + Math.round(((round + 1) * 100 * DAY) / ROUNDS);
    const started = performance.now();
    const [r, purge] = await Promise.all([
      sendLoad(4),
      runPurge(at(cutoff)).then((p) => {
        purgeSeconds += (performance.now() - started) / 1000;
        return p;
      }),
    ]);
    busy.push(r.p99);
    deleted += purge.messages_deleted;
    console.error(`#   round ${round + 1}: quiet p99 ${quiet.at(-1)} ms, during the purge of ${purge.messages_deleted} messages p99 ${r.p99} ms`);
  }
  figures.push(figure(`send p99, quiet (median of ${ROUNDS} rounds of 4 s, 16 connections)`, median(quiet), 'ms'));
  figures.push(figure(`send p99 while purging (median of ${ROUNDS} rounds, interleaved)`, median(busy), 'ms'));
  figures.push(figure('messages purged (with events, attempts, part ids) while sending', deleted, 'messages'));
  figures.push(figure('purge rate while sending', deleted / purgeSeconds, 'messages/s'));

  if (PARTS.has('3')) {
  // 3. Steady traffic with retention, on a database of its own: a day of messages, then the purge
  // (7 days kept, text 1 day), 21 days.
  const steadyFile = join(dir, 'steady.db');
  const steady = await prepareCustomer(`sqlite:${steadyFile}`);
  const steadyStore = openStore(`sqlite:${steadyFile}`);
  const steadyAt = (ms: number) => ({ ...serviceContext(steadyStore, { DATABASE_URL: `sqlite:${steadyFile}` }), clock: () => ms });
  await setAccountRetention(steadyAt(now), steady.accountId, { bodyDays: 1, messageDays: 7 });
  const perDay = 20_000;
  const sizes: { pages: number; free: number; bytes: number }[] = [];
  for (let day = 0; day < 21; day++) {
    const dayStart = now + day * DAY;
    await writeMessages(steadyStore, steady.accountId, perDay, dayStart, Math.floor(DAY / perDay), true);
    await runPurge(steadyAt(dayStart + DAY));
    sizes.push(pages(steadyFile));
    console.error(`#   day ${day + 1}: ${sizes.at(-1)!.pages} pages, ${sizes.at(-1)!.free} free, file ${(statSync(steadyFile).size / 2 ** 20).toFixed(1)} MiB`);
  }
  await steadyStore.close();
  const mib = (b: number) => b / 2 ** 20;
  figures.push(figure(`database after 8 days of ${perDay} messages/day (7 kept)`, mib(sizes[7]!.bytes), 'MiB'));
  figures.push(figure('database after 21 days', mib(sizes[20]!.bytes), 'MiB'));
  figures.push(figure('growth from day 8 to day 21 (space reused)', ((sizes[20]!.bytes - sizes[7]!.bytes) / sizes[7]!.bytes) * 100, '%', { max: 10 }));
  }

  if (PARTS.has('4')) {
  // 4. The recipient index on the send path: with and without, interleaved (ABBA, so that a
  // drift of the machine's load over the rounds weighs on both alike). Each change is checkpointed
  // out of the WAL before its round, so no round pays for the other's DDL.
  const withIndex: { rps: number[]; p99: number[] } = { rps: [], p99: [] };
  const without: { rps: number[]; p99: number[] } = { rps: [], p99: [] };
  let indexed = true;
  for (const want of [false, true, true, false, false, true]) {
    if (want !== indexed) {
      await sql.raw(want ? 'create index messages_account_recipient on messages (account_id, recipient)' : 'drop index messages_account_recipient').execute(store.db);
      indexed = want;
    }
    await sql`pragma wal_checkpoint(truncate)`.execute(store.db);
    await sendLoad(1);
    const r = await sendLoad(4);
    (want ? withIndex : without).rps.push(r.requestsPerSecond);
    (want ? withIndex : without).p99.push(r.p99);
    console.error(`#   ${want ? 'with' : 'without'} the recipient index: ${r.requestsPerSecond.toFixed(0)} sends/s, p99 ${r.p99} ms`);
  }
  figures.push(figure('sends/s without the recipient index (median of 3)', median(without.rps), 'req/s'));
  figures.push(figure('sends/s with it', median(withIndex.rps), 'req/s'));
  figures.push(figure('send p99 without the recipient index', median(without.p99), 'ms'));
  figures.push(figure('send p99 with it', median(withIndex.p99), 'ms'));
  }
  await server.stop();
  await store.close();
  report(figures);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
