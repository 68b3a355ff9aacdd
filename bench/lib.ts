/**
 * Shared pieces of the benchmarks: start Pigeon as a real process, generate load from another
 * process (autocannon's command line), sample a process's memory, and report figures as the last
 * line of stdout for bench/run.ts to collect.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface Figure {
  name: string;
  value: number;
  unit: string;
  /** The target, as text ("≥ 10000"), if there is one. */
  target?: string;
  /** Whether the target is met (absent when there is no target). */
  met?: boolean;
}

export function figure(name: string, value: number, unit: string, target?: { min?: number; max?: number }): Figure {
  const f: Figure = { name, value: Math.round(value * 100) / 100, unit };
  if (target?.min !== undefined) {
    f.target = `>= ${target.min}`;
    f.met = value >= target.min;
  }
  if (target?.max !== undefined) {
    f.target = `< ${target.max}`;
    f.met = value < target.max;
  }
  return f;
}

/**
 * A figure's target for the store it was measured on: the embedded store's targets, and the ones
 * set for PostgreSQL where there are any (send p99 under 40 ms, a bulk of 10,000 under 500 ms,
 * 5,000 msg/s delivered); without one, a PostgreSQL figure is printed for information.
 */
type Target = { min?: number; max?: number };
export function targetsFor(store: string): (sqlite: Target, postgres?: Target) => Target | undefined {
  return (sqlite, postgres) => (store === 'sqlite' ? sqlite : postgres);
}

export function report(figures: Figure[]): void {
  process.stdout.write(`${JSON.stringify({ figures })}\n`);
}

export interface LoadResult {
  /** Successful (2xx) answers per second: a refusal is cheaper than the work, so it never counts. */
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  total: number;
}

/** Runs autocannon in its own process against `url`. */
export async function load(
  url: string,
  opts: { connections: number; seconds: number; method?: string; headers?: Record<string, string>; body?: string; /** Requests per second in all (autocannon's -R); absent, as fast as answered. */ rate?: number; /** The answers that count as success: 2xx (default), or 3xx for a redirect. */ ok?: '2xx' | '3xx' },
): Promise<LoadResult> {
  const args = ['-c', String(opts.connections), '-d', String(opts.seconds), '-j'];
  if (opts.rate) args.push('-R', String(opts.rate));
  if (opts.method) args.push('-m', opts.method);
  for (const [k, v] of Object.entries(opts.headers ?? {})) args.push('-H', `${k}=${v}`);
  if (opts.body) args.push('-b', opts.body);
  args.push(url);
  const { stdout } = await run(process.execPath, ['node_modules/autocannon/autocannon.js', ...args], { maxBuffer: 64 * 1024 * 1024 });
  const r = JSON.parse(stdout);
  const ok = opts.ok ?? '2xx';
  const other = r.requests.total - r[ok] - r.errors;
  if (other > 0 || r.errors > 0) console.error(`# ${url}: ${other} non-${ok} answers and ${r.errors} errors, left out of the rate`);
  return {
    requestsPerSecond: r[ok] / r.duration,
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors,
    total: r.requests.total,
  };
}

/** Samples a process's resident memory every 100 ms; `stop()` returns the peak in MiB. */
export function sampleRss(pid: number): { stop(): number } {
  let peak = 0;
  const read = () => {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      peak = Math.max(peak, kb / 1024);
    } catch {
      // the process is gone
    }
  };
  read();
  const timer = setInterval(read, 100);
  return {
    stop() {
      clearInterval(timer);
      read();
      return peak;
    },
  };
}

/** The middle value (the mean of the two middle ones for an even count). */
export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

/** Jobs of `queue` waiting in the server at `base` (http://host:port), from its /metrics. */
export async function queueDepth(base: string, queue = 'dispatch'): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return Number(new RegExp(`^pigeon_queue_depth\\{queue="${queue}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** CPU clock ticks (1/100 s) a process has used so far (its own and its reaped children's), 0 once it is gone. */
export function cpuTicks(pid: number): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
  } catch {
    return 0;
  }
}

/** The processes a process started (Linux, /proc): `serve`'s delivery process, say. */
export function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

export interface StatementCounts {
  /** By kind (the statement's first characters), how many ran and their time on the client side. */
  counts: Map<string, { n: number; ms: number }>;
  counting: boolean;
}

/**
 * Counts and times the statements this process sends through `pg` while `counting` is set:
 * `pg_stat_statements` needs `shared_preload_libraries`, which a default install does not load.
 * `width` is how much of a statement's text names its kind; `skip` leaves out the bench's own.
 */
export function countPgStatements(width: number, skip: (text: string) => boolean = () => false): StatementCounts {
  const state: StatementCounts = { counts: new Map(), counting: false };
  const pg = createRequire(import.meta.url)('pg') as typeof import('pg');
  const original = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  pg.Client.prototype.query = function (this: unknown, ...args: unknown[]) {
    const text = typeof args[0] === 'string' ? args[0] : ((args[0] as { text?: string })?.text ?? '?');
    const started = performance.now();
    const result = original.apply(this, args);
    if (state.counting && !skip(text) && result && typeof (result as Promise<unknown>).then === 'function') {
      const kind = text.replace(/\s+/g, ' ').trim().slice(0, width).replace(/\$\d+.*$/, '…');
      void (result as Promise<unknown>).finally(() => {
        const c = state.counts.get(kind) ?? { n: 0, ms: 0 };
        c.n++;
        c.ms += performance.now() - started;
        state.counts.set(kind, c);
      });
    }
    return result;
  } as typeof pg.Client.prototype.query;
  return state;
}

/**
 * CPU ticks so far of PostgreSQL's processes that work for one run: its own backends (those whose
 * connections carry `applicationName`; other clients of a shared database are left out) and the
 * auxiliary processes (WAL writer, checkpointer, background writer, autovacuum), which work for
 * everyone. The query is marked `bench poll`, for a statement count to leave out.
 */
export async function postgresTicks(databaseUrl: string, applicationName: string): Promise<Map<number, number>> {
  const pg = createRequire(import.meta.url)('pg') as typeof import('pg');
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>(
      `select /* bench poll */ pid from pg_stat_activity where application_name = $1 or backend_type <> 'client backend'`,
      [applicationName],
    );
    return new Map(rows.map((r) => [r.pid, cpuTicks(r.pid)]));
  } finally {
    await client.end();
  }
}

export interface OpenLoadResult {
  /** Requests issued per second (the offered rate, unless this process fell behind). */
  offered: number;
  /** Answered 2xx per second. */
  ok: number;
  /** Answered 2xx in all. */
  answered: number;
  failed: number;
  p50: number;
  p99: number;
  p999: number;
  /** How late this process itself sent requests (from when each was due to when it went out): p99, ms. */
  lateP99: number;
}

/**
 * An open-loop load: requests go out evenly at `rate` a second whatever the answers' speed, as
 * many independent clients would send them (autocannon's connections wait for each answer, so a
 * slow server is offered less). A request's latency counts from when it was due, not from when
 * this process got round to sending it, so a stall of the generator or of the server shows in the
 * percentiles instead of thinning the load. Connections are kept alive and opened as needed.
 */
export async function openLoad(
  url: string,
  opts: { rate: number; seconds: number; method?: string; headers?: Record<string, string>; body?: string | ((n: number) => string); /** The answers that count as success: 2xx (default), or 3xx for a redirect. */ ok?: '2xx' | '3xx' },
): Promise<OpenLoadResult> {
  const good = opts.ok === '3xx' ? (s: number) => s >= 300 && s < 400 : (s: number) => s >= 200 && s < 300;
  const http = await import('node:http');
  const agent = new http.Agent({ keepAlive: true, maxSockets: 2048 });
  const target = new URL(url);
  const latencies: number[] = [];
  const late: number[] = [];
  let ok = 0;
  let failed = 0;
  let issued = 0;
  let open = 0;
  const total = Math.round(opts.rate * opts.seconds);
  const began = performance.now();
  let lastIssued = began;
  const done = new Promise<void>((resolveAll) => {
    const finish = (due: number, good: boolean) => {
      latencies.push(performance.now() - due);
      if (good) ok++;
      else failed++;
      open--;
      if (issued === total && open === 0) resolveAll();
    };
    const fire = (n: number, due: number) => {
      open++;
      late.push(performance.now() - due);
      const body = typeof opts.body === 'function' ? opts.body(n) : opts.body;
      const req = http.request(
        { agent, host: target.hostname, port: target.port, path: target.pathname + target.search, method: opts.method ?? 'GET', headers: { ...opts.headers, ...(body ? { 'content-length': Buffer.byteLength(body) } : {}) } },
        (res) => {
          res.resume();
          res.once('end', () => finish(due, good(res.statusCode!)));
        },
      );
      req.once('error', () => finish(due, false));
      req.end(body);
    };
    // A timer of 1 ms: each tick sends what has fallen due since the last, one or two requests at
    // a time at the rates measured here, never a burst a coarser tick would make.
    const tick = () => {
      const owed = Math.min(total, Math.floor(((performance.now() - began) * opts.rate) / 1000));
      for (; issued < owed; issued++) fire(issued, began + (issued * 1000) / opts.rate);
      if (issued < total) setTimeout(tick, 1);
      else lastIssued = performance.now();
    };
    tick();
  });
  await done;
  agent.destroy();
  const elapsed = (performance.now() - began) / 1000;
  latencies.sort((a, b) => a - b);
  late.sort((a, b) => a - b);
  return {
    offered: (total * 1000) / Math.max(1, lastIssued - began),
    ok: ok / elapsed,
    answered: ok,
    failed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    p999: percentile(latencies, 99.9),
    lateP99: percentile(late, 99),
  };
}

/**
 * A bare Node HTTP server in a process of its own, answering every request with a small JSON body
 * once its body is read: what the machine and the load generator cost a request at a given rate,
 * with no framework, store or logging. A goal set as a multiple of "the machine's floor" is
 * judged against this server, measured by the same generator in the same run.
 */
export async function startBareServer(): Promise<{ url: string; stop(): Promise<void> }> {
  const { spawn } = await import('node:child_process');
  const source = `
    const http = require('node:http');
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => { res.writeHead(200, { 'content-type': 'application/json' }); res.end('{"status":"success"}'); });
    });
    server.keepAliveTimeout = 10000;
    server.listen(0, '127.0.0.1', () => process.stdout.write(String(server.address().port) + '\\n'));
  `;
  const child = spawn(process.execPath, ['-e', source], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('\n')) resolve(Number(out.trim()));
    });
    child.once('exit', (code) => reject(new Error(`the bare server exited with ${code}`)));
  });
  return {
    url: `http://127.0.0.1:${port}/`,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
