/**
 * The tracked-link redirect (DECISIONS.md §16): `GET /l/<code>` through a real `pigeon serve`
 * offered 1,000 clicks/s by autocannon (-R), each one counted (a phone's user agent), on links
 * made by a bulk send with `track_links`. The target: p99 under 10 ms on both stores.
 * Prints the redirects/s answered, p50 and p99, beside the p99 of a static route of the same
 * server at the same rate (on a shared machine, what any request costs at that moment).
 *
 *   node --import tsx bench/links.bench.ts [seconds=10] [sqlite|postgres] [rate=1000]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { figure, load, report } from './lib.ts';
import { freshDatabase, prepareCustomer, serveAcceptance } from './setup.ts';

const SECONDS = Number(process.argv[2] ?? 10);
const STORE = process.argv[3] ?? 'sqlite';
const RATE = Number(process.argv[4] ?? 1000);
const LINKS = 1000;
const PHONE = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1';

const dir = mkdtempSync(join(tmpdir(), 'pigeon-bench-links-'));
try {
  const databaseUrl = await freshDatabase(STORE, dir, 'bench_links');
  const { key } = await prepareCustomer(databaseUrl);
  const { server, base } = await serveAcceptance(databaseUrl, {
    // One address offers every click here; in production the limit is per address.
    LINK_RATE_LIMIT_MAX: '100000000',
    LOG_REQUESTS: 'false',
  });
  try {
    const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const messages = Array.from({ length: LINKS }, (_, i) => ({ to: `+1415555${String(i).padStart(4, '0')}`, message: `Sale today: https://127.0.0.1/sale?n=${i}` }));
    const bulk = (await (await fetch(`${base}/v1/sms/bulk`, { method: 'POST', headers: auth, body: JSON.stringify({ from: 'Bench', track_links: true, messages }) })).json()) as { batch_id: string };
    const listed = (await (await fetch(`${base}/v1/sms/links?batch_id=${bulk.batch_id}&limit=1`, { headers: auth })).json()) as { data: { short_url: string }[] };
    const link = listed.data[0]!.short_url;
    // The same server's static favicon at the same rate: what the machine itself costs a request now.
    const floor = await load(`${base}/favicon.ico`, { connections: 16, seconds: SECONDS, rate: RATE });
    const r = await load(link, { connections: 16, seconds: SECONDS, rate: RATE, headers: { 'user-agent': PHONE }, ok: '3xx' });
    report([
      figure(`static route (${STORE}) at ${RATE}/s: p99, for comparison`, floor.p99, 'ms'),
      figure(`redirect /l/<code> (${STORE}) at ${RATE}/s offered: answered/s`, r.requestsPerSecond, 'req/s', { min: RATE * 0.95 }),
      figure(`redirect /l/<code> (${STORE}) p50`, r.p50, 'ms'),
      figure(`redirect /l/<code> (${STORE}) p99`, r.p99, 'ms', { max: 10 }),
    ]);
  } finally {
    await server.stop();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
