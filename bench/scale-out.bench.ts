/**
 * PostgreSQL scale-out: 1, 2 and 4 API processes (`pigeon serve --no-workers`) plus one
 * `pigeon worker` (simulator carrier), on one fresh schema each time. The same total load (64
 * connections, split evenly over the API processes, one autocannon process per API process) goes
 * to `POST /v1/sms/send` for the given time; prints the total of successful sends per second, the
 * highest p99, the messages the worker took to `delivered` during the load, and the dispatch
 * backlog at the end, with the machine's cores and load average beside each configuration.
 *
 *   node --import tsx bench/scale-out.bench.ts [seconds=10] [api processes=1,2,4]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startPigeon, type PigeonProcess } from '../test/helpers/processes.ts';
import { figure, load, queueDepth, report, type Figure } from './lib.ts';
import { machine } from './peers.ts';
import { freshDatabase, prepareCustomer } from './setup.ts';

const SECONDS = Number(process.argv[2] ?? 10);
const CONFIGS = (process.argv[3] ?? '1,2,4').split(',').map(Number);
const CONNECTIONS = 64;

const dir = mkdtempSync(join(tmpdir(), 'pigeon-scale-'));
const figures: Figure[] = [];
try {
  for (const apis of CONFIGS) {
    const databaseUrl = await freshDatabase('postgres', dir, 'scale_out');
    const { key } = await prepareCustomer(databaseUrl);
    const env = { DATABASE_URL: databaseUrl, RATE_LIMIT_MAX: '100000000', DISPATCH_BACKLOG_LIMIT: '100000000', DISPATCH_BACKLOG_ACCOUNT_SHARE: '100' };
    const processes: PigeonProcess[] = [];
    try {
      const ports: number[] = [];
      for (let i = 0; i < apis; i++) {
        const port = await freePort();
        processes.push(await startPigeon(['serve', '--no-workers'], { ...env, PORT: String(port), SMPP_SERVER_PORT: '0' }));
        ports.push(port);
      }
      processes.push(await startPigeon(['worker'], env));
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      const delivered = async () =>
        ((await (await fetch(`http://127.0.0.1:${ports[0]}/v1/sms/delivery-reports?status=delivered&limit=1`, { headers })).json()) as { pagination: { total: number } }).pagination.total;
      const before = await delivered();
      const t = performance.now();
      const results = await Promise.all(
        ports.map((port) =>
          load(`http://127.0.0.1:${port}/v1/sms/send`, {
            connections: Math.max(1, Math.round(CONNECTIONS / apis)),
            seconds: SECONDS,
            method: 'POST',
            headers,
            body: JSON.stringify({ to: '+14155552671', from: 'Bench', message: 'Your code is 123456' }),
          }),
        ),
      );
      const elapsed = (performance.now() - t) / 1000;
      const deliveredRate = ((await delivered()) - before) / elapsed;
      const backlog = await queueDepth(`http://127.0.0.1:${ports[0]}`);
      const rate = results.reduce((n, r) => n + r.requestsPerSecond, 0);
      const at = machine();
      console.error(`#   ${apis} API process${apis === 1 ? '' : 'es'} + 1 worker: ${Math.round(rate)} sends/s, ${Math.round(deliveredRate)} delivered/s, backlog ${backlog} (${at})`);
      figures.push(
        figure(`scale-out (postgres) ${apis} API + 1 worker: sends/s (${at})`, rate, 'req/s'),
        figure(`scale-out (postgres) ${apis} API + 1 worker: p99, highest`, Math.max(...results.map((r) => r.p99)), 'ms'),
        figure(`scale-out (postgres) ${apis} API + 1 worker: delivered/s during the load`, deliveredRate, 'msg/s'),
        figure(`scale-out (postgres) ${apis} API + 1 worker: dispatch backlog at the end`, backlog, 'jobs'),
      );
    } finally {
      await Promise.all(processes.map((p) => p.stop()));
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
report(figures);
