/**
 * The tracked-link redirect (DECISIONS.md §16): `GET /l/<code>` through a real default `pigeon
 * serve` (its delivery process on, as in production) offered 1,000 clicks/s in an open loop
 * (bench/lib.ts openLoad: latency counted from when each request was due), each one counted (a
 * phone's user agent), on links made by a bulk send with `track_links`. The issue's target: p99
 * under 10 ms on both stores.
 *
 * Interleaved in each round, under the same generator at the same rate: a bare Node HTTP server
 * in a process of its own (the machine's and the generator's floor), a static route of the same
 * Pigeon (what any request costs that process now), and the redirect; the next round in the
 * reverse order. Prints each run, then the medians with their spread, how late the generator
 * itself sent (p99), and the goal as met or not.
 *
 *   node --import tsx bench/links.bench.ts [seconds=10] [sqlite|postgres] [rate=1000] [rounds=2]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { childPids, cpuTicks, figure, median, openLoad, postgresTicks, queueDepth, report, startBareServer, type OpenLoadResult } from './lib.ts';
import { machine } from './peers.ts';
import { freshDatabase, prepareCustomer } from './setup.ts';
import { freePort, startPigeon } from '../test/helpers/processes.ts';

const SECONDS = Number(process.argv[2] ?? 10);
const STORE = process.argv[3] ?? 'sqlite';
const RATE = Number(process.argv[4] ?? 1000);
const ROUNDS = Math.max(1, Number(process.argv[5] ?? 2));
const WARMUP = Math.max(1, Math.min(3, Math.round(SECONDS / 3)));
const LINKS = 1000;
const PHONE = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1';

const spread = (values: number[]) => `${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)}`;

const dir = mkdtempSync(join(tmpdir(), 'pigeon-bench-links-'));
try {
  const databaseUrl = await freshDatabase(STORE, dir, 'bench_links');
  const { key } = await prepareCustomer(databaseUrl);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  // Its backends named, for the database server's CPU per click (postgresTicks).
  const serveUrl = STORE === 'postgres' ? `${databaseUrl}&application_name=bench_links` : databaseUrl;
  const server = await startPigeon(['serve'], {
    DATABASE_URL: serveUrl,
    PORT: String(port),
    PUBLIC_URL: base,
    SMPP_SERVER_PORT: '0',
    RATE_LIMIT_MAX: '100000000',
    // One address offers every click here; in production the limit is per address.
    LINK_RATE_LIMIT_MAX: '100000000',
  });
  const bare = await startBareServer();
  try {
    const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const messages = Array.from({ length: LINKS }, (_, i) => ({ to: `+1415555${String(i).padStart(4, '0')}`, message: `Sale today: https://127.0.0.1/sale?n=${i}` }));
    const bulk = (await (await fetch(`${base}/v1/sms/bulk`, { method: 'POST', headers: auth, body: JSON.stringify({ from: 'Bench', track_links: true, messages }) })).json()) as { batch_id: string };
    const listed = (await (await fetch(`${base}/v1/sms/links?batch_id=${bulk.batch_id}&limit=100`, { headers: auth })).json()) as { data: { short_url: string }[] };
    const links = listed.data.map((l) => l.short_url);
    // The bulk's messages delivered first: the clicks are measured on a quiet pipeline.
    const deadline = Date.now() + 30_000;
    while ((await queueDepth(base)) > 0 && Date.now() < deadline) await sleep(200);

    const targets = {
      'bare Node server': () => openLoad(bare.url, { rate: RATE, seconds: SECONDS }),
      'static route': () => openLoad(`${base}/favicon.ico`, { rate: RATE, seconds: SECONDS }),
      // The same link for every click, as a campaign's popular link gets them; counted every time.
      redirect: () => openLoad(links[0]!, { rate: RATE, seconds: SECONDS, headers: { 'user-agent': PHONE }, ok: '3xx' }),
    };
    type Name = keyof typeof targets;
    const runs = new Map<Name, OpenLoadResult[]>();
    await openLoad(links[1]!, { rate: RATE, seconds: WARMUP, headers: { 'user-agent': PHONE }, ok: '3xx' });
    // The CPU each answered request cost `serve` (its API process and delivery process) and, on
    // PostgreSQL, the database server (its backends for `serve` and its own processes).
    const serveTicks = () => [server.child.pid!, ...childPids(server.child.pid!)].reduce((sum, pid) => sum + cpuTicks(pid), 0);
    const databaseTicks = async () => (STORE === 'postgres' ? await postgresTicks(databaseUrl, 'bench_links') : new Map<number, number>());
    const cpu = new Map<Name, { serve: number; database: number }[]>();
    for (let round = 1; round <= ROUNDS; round++) {
      const order = Object.keys(targets) as Name[];
      if (round % 2 === 0) order.reverse();
      for (const name of order) {
        const serve0 = serveTicks();
        const database0 = await databaseTicks();
        const r = await targets[name]();
        let database = 0;
        for (const [pid, t] of await databaseTicks()) database += t - (database0.get(pid) ?? 0);
        const perRequest = { serve: ((serveTicks() - serve0) * 10_000) / Math.max(1, r.answered), database: (database * 10_000) / Math.max(1, r.answered) };
        const cost = name === 'bare Node server' ? '' : `; CPU per request: serve ${perRequest.serve.toFixed(0)} µs${STORE === 'postgres' ? `, PostgreSQL ${perRequest.database.toFixed(0)} µs` : ''}`;
        console.error(`#   round ${round}, ${name} at ${RATE}/s: answered ${Math.round(r.ok)}/s, ${r.failed} failed, p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, p99.9 ${r.p999.toFixed(1)} ms, generator late p99 ${r.lateP99.toFixed(1)} ms${cost} (${machine()})`);
        runs.set(name, [...(runs.get(name) ?? []), r]);
        cpu.set(name, [...(cpu.get(name) ?? []), perRequest]);
      }
    }
    const cpuOf = (name: Name, of: 'serve' | 'database') => cpu.get(name)!.map((c) => c[of]);
    const p99 = (name: Name) => runs.get(name)!.map((r) => r.p99);
    const redirect = runs.get('redirect')!;
    report([
      figure(`bare Node server at ${RATE}/s, same generator: p99, median of ${ROUNDS} (${spread(p99('bare Node server'))})`, median(p99('bare Node server')), 'ms'),
      figure(`static route of the same serve (${STORE}) at ${RATE}/s: p99 (${spread(p99('static route'))})`, median(p99('static route')), 'ms'),
      figure(`generator sent late, p99 over every run (${spread([...runs.values()].flat().map((r) => r.lateP99))})`, median([...runs.values()].flat().map((r) => r.lateP99)), 'ms'),
      figure(`redirect /l/<code> (${STORE}) at ${RATE}/s offered: answered/s`, median(redirect.map((r) => r.ok)), 'req/s', { min: RATE * 0.95 }),
      figure(`redirect /l/<code> (${STORE}) p50 (${spread(redirect.map((r) => r.p50))})`, median(redirect.map((r) => r.p50)), 'ms'),
      figure(`redirect /l/<code> (${STORE}): serve's CPU per click (${spread(cpuOf('redirect', 'serve'))}; the static route ${spread(cpuOf('static route', 'serve'))})`, median(cpuOf('redirect', 'serve')), 'µs'),
      ...(STORE === 'postgres'
        ? [figure(`redirect /l/<code> (${STORE}): PostgreSQL's CPU per click (${spread(cpuOf('redirect', 'database'))}; the static route ${spread(cpuOf('static route', 'database'))})`, median(cpuOf('redirect', 'database')), 'µs')]
        : []),
      figure(`redirect /l/<code> (${STORE}) p99 (${spread(p99('redirect'))}), issue 46`, median(p99('redirect')), 'ms', { max: 10 }),
    ]);
  } finally {
    await bare.stop();
    await server.stop();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
