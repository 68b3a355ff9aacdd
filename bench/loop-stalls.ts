/**
 * What blocks the default `serve`'s event loop at a steady rate: the server (and its delivery
 * process) runs under V8's sampling profiler at a fine interval while this process offers sends
 * (or clicks) in an open loop; then every stretch of the API process's main thread that ran
 * without going idle for longer than THRESHOLD ms is printed with what ran in it (the source
 * files and functions of Pigeon's under the samples, and the self time by module), beside the
 * collector's pauses (--trace-gc) and the slowest requests.
 *
 *   node --import tsx bench/loop-stalls.ts [seconds=8] [sqlite|postgres] [send|links] [threshold ms=3]
 *
 * KEEP=dir keeps the profiles and the server's output there.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { cpuTicks, openLoad, queueDepth } from './lib.ts';
import { machine } from './peers.ts';
import { freshDatabase, prepareCustomer } from './setup.ts';
import { freePort, startPigeon } from '../test/helpers/processes.ts';

const SECONDS = Number(process.argv[2] ?? 8);
const STORE = process.argv[3] ?? 'sqlite';
const WHAT = process.argv[4] ?? 'send';
const THRESHOLD = Number(process.argv[5] ?? 3);

interface Frame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface Profile {
  nodes: { id: number; callFrame: Frame; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
}

const dir = process.env.KEEP ?? mkdtempSync(join(tmpdir(), 'pigeon-stalls-'));
mkdirSync(dir, { recursive: true });
const profiles = join(dir, 'profiles');
try {
  const databaseUrl = await freshDatabase(STORE, dir, 'bench_stalls');
  const { key } = await prepareCustomer(databaseUrl);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = await startPigeon(
    ['serve'],
    {
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      PUBLIC_URL: base,
      SMPP_SERVER_PORT: '0',
      RATE_LIMIT_MAX: '100000000',
      LINK_RATE_LIMIT_MAX: '100000000',
      DISPATCH_BACKLOG_ACCOUNT_SHARE: '100',
      DISPATCH_BACKLOG_LIMIT: '100000000',
      PIGEON_BUNDLE: 'off',
      ...(process.env.STALLS_ENV ? JSON.parse(process.env.STALLS_ENV) : {}),
    },
    60_000,
    process.env.STALLS_NODE_ARGS ? (JSON.parse(process.env.STALLS_NODE_ARGS) as string[]) : ['--cpu-prof', '--cpu-prof-interval=250', `--cpu-prof-dir=${profiles}`, '--trace-gc'],
  );
  const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  let load: () => ReturnType<typeof openLoad>;
  if (WHAT === 'links') {
    const messages = Array.from({ length: 100 }, (_, i) => ({ to: `+1415555${String(i).padStart(4, '0')}`, message: `Sale today: https://127.0.0.1/sale?n=${i}` }));
    const bulk = (await (await fetch(`${base}/v1/sms/bulk`, { method: 'POST', headers: auth, body: JSON.stringify({ from: 'Bench', track_links: true, messages }) })).json()) as { batch_id: string };
    const listed = (await (await fetch(`${base}/v1/sms/links?batch_id=${bulk.batch_id}&limit=1`, { headers: auth })).json()) as { data: { short_url: string }[] };
    const deadline = Date.now() + 30_000;
    while ((await queueDepth(base)) > 0 && Date.now() < deadline) await sleep(200);
    load = () => openLoad(listed.data[0]!.short_url, { rate: 1000, seconds: SECONDS, headers: { 'user-agent': 'Mozilla/5.0 (iPhone)' }, ok: '3xx' });
  } else {
    load = () =>
      openLoad(`${base}/v1/sms/send`, {
        rate: 1000,
        seconds: SECONDS,
        method: 'POST',
        headers: auth,
        body: (n) => JSON.stringify({ to: `+1415555${String(1000 + (n % 8999)).padStart(4, '0')}`, from: 'Bench', message: 'Your code is 123456' }),
      });
  }
  await load();
  const pids = [server.child.pid!, ...server.deliveryPids()];
  const ticks0 = pids.map(cpuTicks);
  const startedUs = Number(process.hrtime.bigint() / 1000n);
  const r = await load();
  const endedUs = Number(process.hrtime.bigint() / 1000n);
  const cpu = pids.map((p, i) => Math.round(((cpuTicks(p) - ticks0[i]!) * 10_000) / Math.max(1, r.answered)));
  console.error(`# ${WHAT} at 1000/s for ${SECONDS} s: p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, p99.9 ${r.p999.toFixed(1)} ms, generator late p99 ${r.lateP99.toFixed(1)} ms; CPU per request: API process ${cpu[0]} µs, delivery process ${cpu[1] ?? '-'} µs (${machine()})`);
  await server.stop();
  writeFileSync(join(dir, 'server.out'), server.output());
  const apiPid = server.child.pid!;
  // --trace-gc lines of the API process during the measured window are not time-stamped against the
  // monotonic clock; their pause lengths are summed over the whole run.
  const gc = [...server.output().matchAll(/\[(\d+):(0x[0-9a-f]+)\]\s+\d+ ms: (Scavenge|Mark-Compact|Mark-sweep)[^,]*,\s*([\d.]+)\s*\/\s*([\d.]+) ms/g)].filter((m) => Number(m[1]) === apiPid);
  // The first isolate to collect is the main thread's (the others are worker threads, started later).
  const pauses = gc.filter((m) => m[2] === gc[0]?.[2]).map((m) => ({ kind: m[3]!, ms: Number(m[4]) }));
  const over = pauses.filter((p) => p.ms > THRESHOLD);
  const total = pauses.reduce((n, p) => n + p.ms, 0);
  console.error(`# API main thread: ${pauses.filter((p) => p.kind === 'Scavenge').length} scavenges and ${pauses.filter((p) => p.kind !== 'Scavenge').length} full collections in the whole run (warm-up included), ${total.toFixed(0)} ms of pauses, ${over.length} over ${THRESHOLD} ms (longest ${Math.max(0, ...pauses.map((p) => p.ms)).toFixed(1)})`);

  if (process.env.STALLS_NODE_ARGS) process.exit(0);
  const file = readdirSync(profiles).find((f) => f.includes(`.${apiPid}.`) && f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no profile of ${apiPid} in ${readdirSync(profiles).join(', ')}`);
  const profile = JSON.parse(readFileSync(join(profiles, file), 'utf8')) as Profile;
  stalls(profile, startedUs, endedUs);
} finally {
  if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true });
}

function stalls(profile: Profile, fromUs: number, toUs: number): void {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const label = (f: Frame) => {
    const src = /\/(src\/[^?]*)$/.exec(f.url);
    const npm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(f.url);
    const where = src ? src[1] : npm ? `npm ${npm[1]}` : f.url.startsWith('node:') ? f.url : f.url ? f.url.split('/').pop() : '';
    return `${f.functionName || '(anonymous)'}${where ? ` ${where}:${f.lineNumber + 1}` : ''}`;
  };
  /** The innermost frame of Pigeon's own source on the sample's stack, or the outermost frame. */
  const ownFrame = (id: number) => {
    let outer = byId.get(id)!.callFrame;
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const f = byId.get(at)!.callFrame;
      if (/\/src\//.test(f.url)) return label(f);
      if (f.functionName !== '(root)') outer = f;
    }
    return label(outer);
  };
  let t = profile.startTime;
  interface Stretch {
    start: number;
    us: number;
    samples: { id: number; us: number }[];
  }
  let stretch = null as Stretch | null;
  const found: Stretch[] = [];
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    t += dt;
    if (t < fromUs || t > toUs) return;
    const name = byId.get(id)!.callFrame.functionName;
    if (name === '(idle)') {
      if (stretch && stretch.us > THRESHOLD * 1000) found.push(stretch);
      stretch = null;
      return;
    }
    busy += dt;
    stretch ??= { start: t, us: 0, samples: [] };
    stretch.us += dt;
    stretch.samples.push({ id, us: dt });
  });
  // Where the window's busy time went, by the innermost frame of Pigeon's own source.
  const byOwn = new Map<string, number>();
  t = profile.startTime;
  profile.samples.forEach((id, i) => {
    t += profile.timeDeltas[i] ?? 0;
    if (t < fromUs || t > toUs || byId.get(id)!.callFrame.functionName === '(idle)') return;
    const k = ownFrame(id);
    byOwn.set(k, (byOwn.get(k) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const requests = ((toUs - fromUs) / 1e6) * 1000;
  console.error(`# API main thread, µs per request by Pigeon's innermost frame (what it called included):`);
  for (const [k, us] of [...byOwn].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.error(`#   ${(us / requests).toFixed(1).padStart(6)}  ${k}`);
  console.error(`# API main thread: busy ${((busy / (toUs - fromUs)) * 100).toFixed(0)} % of the window; ${found.length} stretches over ${THRESHOLD} ms without going idle:`);
  for (const s of found.sort((a, b) => b.us - a.us).slice(0, 25)) {
    const own = new Map<string, number>();
    const self = new Map<string, number>();
    for (const x of s.samples) {
      own.set(ownFrame(x.id), (own.get(ownFrame(x.id)) ?? 0) + x.us);
      const l = label(byId.get(x.id)!.callFrame);
      self.set(l, (self.get(l) ?? 0) + x.us);
    }
    const top = (m: Map<string, number>, n: number) =>
      [...m]
        .sort((a, b) => b[1] - a[1])
        .slice(0, n)
        .map(([k, us]) => `${(us / 1000).toFixed(1)} ${k}`)
        .join(' | ');
    console.error(`#   at +${((s.start - fromUs) / 1e6).toFixed(3)} s: ${(s.us / 1000).toFixed(1)} ms\n#      own: ${top(own, 5)}\n#      self: ${top(self, 4)}`);
  }
}
