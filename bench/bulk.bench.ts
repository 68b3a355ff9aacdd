/**
 * Bulk acceptance: one `POST /v1/sms/bulk` of 10,000 individually worded messages, then 100,000
 * in ten calls, against a real `pigeon serve --no-workers` (acceptance only: debit, store, enqueue).
 *
 *   node --import tsx bench/bulk.bench.ts [sqlite|postgres]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startPigeon } from '../test/helpers/processes.ts';
import { figure, report, sampleRss, targetsFor } from './lib.ts';
import { freshDatabase, prepareCustomer } from './setup.ts';

const STORE = process.argv[2] ?? 'sqlite';
const target = targetsFor(STORE);

function campaign(n: number, offset: number) {
  return Array.from({ length: n }, (_, i) => ({
    to: `+1415${String((offset + i) % 1000).padStart(3, '0')}${String(3000 + ((offset + i) % 7000)).padStart(4, '0')}`,
    message: `Hello customer ${offset + i}, your parcel arrives tomorrow between 9 and 11.`,
  }));
}

const dir = mkdtempSync(join(tmpdir(), 'pigeon-bench-'));
try {
  const databaseUrl = await freshDatabase(STORE, dir);
  const { key } = await prepareCustomer(databaseUrl);
  const port = await freePort();
  const server = await startPigeon(['serve', '--no-workers'], {
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    SMPP_SERVER_PORT: '0',
    RATE_LIMIT_MAX: '1000000',
    BODY_LIMIT_BYTES: String(16 * 1024 * 1024),
    // Without workers nothing drains the dispatch queue: 110,000 accepted here would pass the
    // account's share of the default backlog and be refused with 429.
    DISPATCH_BACKLOG_LIMIT: '100000000',
  });
  const rss = sampleRss(server.child.pid!);
  const post = async (messages: unknown[]) => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/sms/bulk`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ from: 'Bench', messages }),
    });
    const body = (await res.json()) as { queued: number };
    if (res.status !== 200 || body.queued !== messages.length) throw new Error(`bulk failed: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
  };
  // Warm-up with one campaign of the same size, not counted: a server runs for days, and the first
  // large request of a process also pays for compiling its code paths.
  await post(campaign(10_000, 1_000_000));
  const bodies = Array.from({ length: 11 }, (_, i) => campaign(10_000, i * 10_000));
  let t = performance.now();
  await post(bodies[0]!);
  const one = performance.now() - t;
  t = performance.now();
  for (let i = 1; i <= 10; i++) await post(bodies[i]!);
  const ten = performance.now() - t;
  const peak = rss.stop();
  await server.stop();
  report([
    figure(`bulk 10,000 accepted (${STORE})`, one, 'ms', target({ max: 400 }, { max: 500 })),
    figure(`bulk 100,000 in ten calls (${STORE})`, ten, 'ms'),
    figure(`bulk (${STORE}) peak RSS`, peak, 'MiB', target({ max: 300 })),
  ]);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
