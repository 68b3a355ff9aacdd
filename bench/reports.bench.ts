/**
 * Delivery reports at scale: one million stored messages (100 campaigns of 10,000, mixed
 * statuses), then `GET /v1/sms/delivery-reports` filtered by batch and status under 16
 * connections for the given time. The messages are written straight into the store in large
 * transactions (this is set-up, not what is measured).
 *
 *   node --import tsx bench/reports.bench.ts [seconds=10] [messages=1000000] [sqlite|postgres]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startPigeon } from '../test/helpers/processes.ts';
import { openStore } from '../src/store/connect.ts';
import type { MessagesTable } from '../src/store/database.ts';
import { insertMessages } from '../src/store/repositories/messages.repository.ts';
import { newId } from '../src/util/ids.ts';
import { figure, load, report, sampleRss, targetsFor } from './lib.ts';
import { freshDatabase, prepareCustomer } from './setup.ts';

const SECONDS = Number(process.argv[2] ?? 10);
const TOTAL = Number(process.argv[3] ?? 1_000_000);
const STORE = process.argv[4] ?? 'sqlite';
const PER_BATCH = 10_000;
const target = targetsFor(STORE);
const STATUSES = ['delivered', 'delivered', 'delivered', 'delivered', 'delivered', 'delivered', 'sent', 'failed', 'pending', 'delivered'] as const;

const dir = mkdtempSync(join(tmpdir(), 'pigeon-bench-'));
try {
  const databaseUrl = await freshDatabase(STORE, dir, 'reports');
  const { key, accountId } = await prepareCustomer(databaseUrl);
  const store = openStore(databaseUrl);
  const seedStart = performance.now();
  const batches: string[] = [];
  let now = Date.now() - TOTAL;
  for (let b = 0; b * PER_BATCH < TOTAL; b++) {
    const batchId = newId('bat', now);
    batches.push(batchId);
    const rows: MessagesTable[] = Array.from({ length: Math.min(PER_BATCH, TOTAL - b * PER_BATCH) }, (_, i) => {
      now++;
      const status = STATUSES[i % STATUSES.length]!;
      return {
        id: newId('msg', now),
        account_id: accountId,
        batch_id: batchId,
        recipient: `+1415555${String(i % 10000).padStart(4, '0')}`,
        sender: 'Bench',
        body: `Message ${i}`,
        encoding: 'GSM-7',
        segments: 1,
        status,
        callback_url: null,
        carrier_message_id: null,
        error_code: status === 'failed' ? 'subscriber_unreachable' : null,
        error_message: null,
        created_at: now,
        sent_at: status === 'pending' ? null : now + 10,
        delivered_at: status === 'delivered' ? now + 1000 : null,
        updated_at: now,
        send_at: null,
        validity_period: null,
        expires_at: null,
      };
    });
    await store.db.transaction().execute((trx) => insertMessages(trx, rows));
  }
  await store.close();
  const seedSeconds = (performance.now() - seedStart) / 1000;
  console.error(`# seeded ${TOTAL} messages in ${seedSeconds.toFixed(1)} s`);

  const port = await freePort();
  const server = await startPigeon(['serve', '--no-workers'], { DATABASE_URL: databaseUrl, PORT: String(port), SMPP_SERVER_PORT: '0', RATE_LIMIT_MAX: '100000000' });
  const rss = sampleRss(server.child.pid!);
  const batch = batches[Math.floor(batches.length / 2)]!;
  const headers = { authorization: `Bearer ${key}` };
  const filtered = await load(`http://127.0.0.1:${port}/v1/sms/delivery-reports?batch_id=${batch}&status=delivered&limit=50&page=3`, {
    connections: 16,
    seconds: SECONDS,
    headers,
  });
  const all = await load(`http://127.0.0.1:${port}/v1/sms/delivery-reports?limit=200`, { connections: 16, seconds: Math.max(3, SECONDS / 2), headers });
  const peak = rss.stop();
  await server.stop();
  report([
    figure(`reports by batch and status, ${TOTAL} stored (${STORE}) p99`, filtered.p99, 'ms', target({ max: 20 })),
    figure(`reports by batch and status (${STORE}) requests/s`, filtered.requestsPerSecond, 'req/s'),
    figure(`reports, no filter, 200 per page (${STORE}) p99`, all.p99, 'ms'),
    figure(`reports (${STORE}) peak RSS`, peak, 'MiB', target({ max: 300 })),
  ]);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
