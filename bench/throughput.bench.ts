/**
 * Acceptance to `delivered` through the simulator: campaigns go in at a steady offered rate for
 * the given time while one `pigeon serve` (API and workers, simulator receipts after 1 s) carries
 * them to `delivered`. Prints the accepted and delivered rates over the window (after a warm-up),
 * how fast the dispatch backlog grew over it (flat means the pipeline keeps up with what it is
 * offered; growth means the delivered rate is a ceiling, not sustainable), the calls refused by
 * backpressure, and the backlogs when it ends.
 *
 *   node --import tsx bench/throughput.bench.ts [seconds=60] [offered msg/s=6000] [sqlite|postgres]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, startPigeon } from '../test/helpers/processes.ts';
import { cpuTicks, postgresTicks, figure, queueDepth, report, sampleRss, targetsFor } from './lib.ts';
import { freshDatabase, prepareCustomer } from './setup.ts';

const SECONDS = Number(process.argv[2] ?? 60);
const OFFERED = Number(process.argv[3] ?? 6000);
const STORE = process.argv[4] ?? 'sqlite';
const target = targetsFor(STORE);
const BULK = 500;



const dir = mkdtempSync(join(tmpdir(), 'pigeon-bench-'));
try {
  const fresh = await freshDatabase(STORE, dir, 'throughput');
  const databaseUrl = STORE === 'postgres' ? `${fresh}&application_name=bench_throughput` : fresh;
  const { key } = await prepareCustomer(databaseUrl);
  const port = await freePort();
  // One account carries the whole load: its share of the backlog is all of it.
  const server = await startPigeon(['serve'], { DATABASE_URL: databaseUrl, PORT: String(port), SMPP_SERVER_PORT: '0', RATE_LIMIT_MAX: '1000000', DISPATCH_BACKLOG_ACCOUNT_SHARE: '100' });
  const rss = sampleRss(server.child.pid!);
  const base = `http://127.0.0.1:${port}`;
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const delivered = async () => {
    const res = await fetch(`${base}/v1/sms/delivery-reports?status=delivered&limit=1`, { headers });
    return ((await res.json()) as { pagination: { total: number } }).pagination.total;
  };
  const depth = (queue: string) => queueDepth(base, queue);

  let sent = 0;
  let seq = 0;
  // Past the backlog limit the API answers 503 (backpressure); those calls are counted, not sent.
  const refusals = new Map<number, number>();
  const started = performance.now();
  const tick = 1000 / (OFFERED / BULK);
  const inflight = new Set<Promise<void>>();
  let startDelivered = -1;
  let startAt = 0;
  let serverTicks0 = 0;
  let sentAtStart = 0;
  let backlogAtStart = 0;
  let pgTicks0 = new Map<number, number>();
  while (performance.now() - started < SECONDS * 1000) {
    // The first 10 s warm up; the window starts after them.
    if (startDelivered < 0 && performance.now() - started > Math.min(10_000, SECONDS * 200)) {
      startDelivered = await delivered();
      startAt = performance.now();
      sentAtStart = sent;
      backlogAtStart = await depth('dispatch');
      serverTicks0 = cpuTicks(server.child.pid!);
      if (STORE === 'postgres') pgTicks0 = await postgresTicks(databaseUrl, 'bench_throughput');
    }
    const messages = Array.from({ length: BULK }, () => {
      const n = seq++;
      return { to: `+1415${String(n % 1000).padStart(3, '0')}${String(3000 + (n % 6000)).padStart(4, '0')}`, message: `Order ${n} is on its way.` };
    });
    const p = fetch(`${base}/v1/sms/bulk`, { method: 'POST', headers, body: JSON.stringify({ from: 'Bench', messages }) })
      .then(async (res) => {
        if (res.status === 200) sent += BULK;
        else refusals.set(res.status, (refusals.get(res.status) ?? 0) + 1);
        await res.body?.cancel();
      })
      .finally(() => inflight.delete(p));
    inflight.add(p);
    const next = started + (seq / BULK) * tick;
    await sleep(Math.max(0, next - performance.now()));
  }
  await Promise.all(inflight);
  for (const [status, n] of refusals) console.error(`# ${n} bulk calls of ${BULK} answered ${status}`);
  const endDelivered = await delivered();
  const backlogAtEnd = await depth('dispatch');
  const window = (performance.now() - startAt) / 1000;
  const serverTicks = cpuTicks(server.child.pid!) - serverTicks0;
  let pgTicks = 0;
  if (STORE === 'postgres') for (const [pid, t] of await postgresTicks(databaseUrl, 'bench_throughput')) pgTicks += t - (pgTicks0.get(pid) ?? 0);
  const load = loadavg();
  const receiptBacklog = await depth('receipt');
  const peak = rss.stop();
  await server.stop();
  // The pipeline's whole cost per message, acceptance and delivery: when the backlog grows more
  // are accepted than delivered in the window, so each acceptance and each delivery counts half.
  const perMessage = (t: number) => (t * 10_000) / Math.max(1, (sent - sentAtStart + endDelivered - startDelivered) / 2);
  console.error(`# ${cpus().length} cores, load average ${load.map((l) => l.toFixed(2)).join(' ')} at the end of the window`);
  report([
    figure(`CPU per message accepted and delivered, server (${STORE})`, perMessage(serverTicks), 'µs'),
    ...(STORE === 'postgres' ? [figure(`CPU per message accepted and delivered, PostgreSQL`, perMessage(pgTicks), 'µs')] : []),
    figure(`accepted (${STORE}), offered ${OFFERED}/s`, (sent - sentAtStart) / window, 'msg/s'),
    figure(`to delivered (${STORE}), offered ${OFFERED}/s`, (endDelivered - startDelivered) / window, 'msg/s', target({ min: 5000 }, { min: 5000 })),
    // Flat: the backlog ends the window within a few claims' worth (2 % of a second's offer for
    // each second) of where it began; dispatch works in batches, so a snapshot is never exact.
    figure(`dispatch backlog growth (${STORE})`, (backlogAtEnd - backlogAtStart) / window, 'msg/s', { max: OFFERED * 0.02 }),
    figure(`bulk calls refused by backpressure (${STORE})`, [...refusals.values()].reduce((a, b) => a + b, 0), 'calls', { max: 1 }),
    figure(`dispatch backlog at the end (${STORE})`, backlogAtEnd, 'jobs'),
    figure(`receipt backlog at the end (${STORE})`, receiptBacklog, 'jobs'),
    figure(`pipeline (${STORE}) peak RSS`, peak, 'MiB', target({ max: 300 })),
  ]);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
