/**
 * Fuzzer: starts a real `pigeon serve` on a throwaway SQLite file and throws the hostile requests
 * of test/helpers/hostile.ts at it over HTTP (plus raw-socket cases: overlong headers, garbage,
 * slow senders) for a while, then prints the number of cases, any wrong answers and the server's
 * peak RSS. Exits 1 on a 5xx, an uncatalogued error, a hang, a crash or RSS above --max-rss-mb.
 *
 *   npm run fuzz -- [--cases 20000] [--concurrency 8] [--seed N] [--max-rss-mb 1024]
 */
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import fc from 'fast-check';
import pino from 'pino';
import { loadConfig } from '../src/config/config.ts';
import { openStore } from '../src/store/connect.ts';
import { migrateToLatest } from '../src/store/migrate.ts';
import { createAccount } from '../src/services/accounts/accounts.ts';
import { createApiKey } from '../src/services/keys/api-keys.ts';
import { createOperator } from '../src/services/auth/operators.ts';
import { approveSenderId, registerSenderId } from '../src/services/sender-ids/sender-ids.ts';
import type { Context } from '../src/services/context.ts';
import { freePort, startPigeon } from '../test/helpers/processes.ts';
import { describeCase, hostileCase, judge, type Credentials, type HostileCase } from '../test/helpers/hostile.ts';

const { values: opts } = parseArgs({
  options: {
    cases: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '8' },
    seed: { type: 'string', default: String(Date.now() % 2 ** 31) },
    'max-rss-mb': { type: 'string', default: '1024' },
  },
});
const CASES = Number(opts.cases);
const CONCURRENCY = Number(opts.concurrency);
const SEED = Number(opts.seed);
const MAX_RSS_MB = Number(opts['max-rss-mb']);
const HANG_MS = 20_000;

interface Answer {
  status: number;
  type: string | undefined;
  body: string;
}

function send(port: number, c: HostileCase): Promise<Answer | 'client-refused'> {
  return new Promise((resolve, reject) => {
    let req;
    try {
      req = httpRequest({ host: '127.0.0.1', port, method: c.method, path: c.url, headers: c.headers, timeout: HANG_MS });
    } catch {
      // Node's client will not send some paths and header values at all (a client cannot either).
      return resolve('client-refused');
    }
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => {
      req.destroy();
      reject(new Error(`no answer within ${HANG_MS} ms`));
    });
    req.on('error', reject);
    req.end(c.payload);
  });
}

/** Raw bytes on a socket; resolves with what came back when the server closed or answered. */
function raw(port: number, chunks: string[], delayMs = 0): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString()));
    socket.on('error', () => {});
    socket.on('close', () => resolve(received));
    socket.setTimeout(HANG_MS, () => socket.destroy());
    void (async () => {
      for (const chunk of chunks) {
        if (socket.destroyed) return;
        socket.write(chunk);
        if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
      }
      if (!socket.destroyed) socket.end();
    })();
  });
}

function rssMb(pid: number): number {
  try {
    const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Number(kb) / 1024 : 0;
  } catch {
    return 0;
  }
}

/** Logs in through the forms as a browser would; returns the cookie header and the CSRF token of a page. */
async function browserLogin(base: string, formPage: string, action: string, form: Record<string, string>, after: string) {
  const cookies = new Map<string, string>();
  const go = async (method: string, path: string, body?: Record<string, string>) => {
    const res = await fetch(base + path, {
      method,
      redirect: 'manual',
      headers: { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '), ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      ...(body ? { body: new URLSearchParams(body).toString() } : {}),
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    return res.text();
  };
  const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
  await go('POST', action, { _csrf: csrfOf(await go('GET', formPage)), ...form });
  const csrf = csrfOf(await go('GET', after));
  return { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '), csrf };
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-fuzz-'));
  const databaseUrl = `sqlite:${join(dir, 'pigeon.db')}`;
  const store = openStore(databaseUrl);
  await migrateToLatest(store.db);
  const ctx: Context = { store, config: loadConfig({ DATABASE_URL: databaseUrl }), clock: Date.now, log: pino({ level: 'silent' }), wake: () => {} };
  const account = await createAccount(ctx, { name: 'Fuzz', email: 'fuzz@example.com', credits: 1_000_000_000 });
  const { key } = await createApiKey(ctx, account.id, { label: 'fuzz' });
  await approveSenderId(ctx, (await registerSenderId(ctx, account.id, 'Acme')).id);
  const pending = await registerSenderId(ctx, account.id, 'Pending');
  await createOperator(ctx, 'ops@example.com', 'operator password');
  await store.close();

  const port = await freePort();
  const server = await startPigeon(['serve'], {
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    LOG_LEVEL: 'info', // startPigeon waits for the "pigeon started" line
    RATE_LIMIT_MAX: '1000000',
    AUTH_FAILURE_LIMIT: '1000000',
    SIM_DELIVERY_DELAY_MS: '100',
  });
  const pid = server.child.pid!;
  const base = `http://127.0.0.1:${port}`;
  const owner = await browserLogin(base, '/dashboard/signup', '/dashboard/signup', { name: 'Fuzz Owner', email: 'owner@example.com', password: 'fuzz owner password' }, '/dashboard/settings/api-keys');
  const operator = await browserLogin(base, '/operator/login', '/operator/login', { email: 'ops@example.com', password: 'operator password' }, '/operator/accounts');
  const creds: Credentials = { key, owner, operator: { ...operator, accountId: account.id, senderIdId: pending.id } };

  const startRss = rssMb(pid);
  let peakRss = startRss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb(pid))), 100);
  const failures: string[] = [];
  let tried = 0;
  let clientRefused = 0;
  const byStatus = new Map<number, number>();
  const started = Date.now();

  // Raw-socket cases first: what an HTTP client library would not send.
  const rawCases: [string, string[], number][] = [
    ['overlong header', [`GET /v1/account HTTP/1.1\r\nHost: x\r\nX-Long: ${'a'.repeat(100_000)}\r\n\r\n`], 0],
    ['many headers', [`GET /v1/account HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 3000 }, (_, i) => `X-${i}: y\r\n`).join('')}\r\n`], 0],
    ['garbage', ['\x00\x01\x02\xff NOT HTTP\r\n\r\n'], 0],
    ['bad chunked body', ['POST /v1/sms/send HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n'], 0],
    ['content-length mismatch', ['POST /v1/sms/send HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{}'], 0],
    ['both length and chunked', ['POST /v1/sms/send HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'], 0],
    ['HTTP/0.9', ['GET /\r\n'], 0],
    ['slow headers', ['GET /health HTTP/1.1\r\n', 'Host: x\r\n', 'X-A: b\r\n'], 1000],
  ];
  for (const [name, chunks, delay] of rawCases) {
    tried++;
    const answer = await raw(port, chunks, delay);
    const status = Number(answer.slice(9, 12));
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
    if (status >= 500) failures.push(`raw ${name}: ${answer.slice(0, 300)}`);
  }

  const arbitrary = hostileCase(creds);
  const queue = fc.sample(arbitrary, { seed: SEED, numRuns: CASES });
  let next = 0;
  const worker = async () => {
    while (next < queue.length && server.child.exitCode === null && server.child.signalCode === null) {
      const c = queue[next++]!;
      tried++;
      try {
        const answer = await send(port, c);
        if (answer === 'client-refused') {
          clientRefused++;
          continue;
        }
        byStatus.set(answer.status, (byStatus.get(answer.status) ?? 0) + 1);
        const wrong = judge(c, answer.status, answer.type, answer.body);
        if (wrong) failures.push(`${wrong}\n  ${describeCase(c)}`);
      } catch (err) {
        failures.push(`${(err as Error).message}\n  ${describeCase(c)}`);
      }
      if (tried % 2000 === 0) console.log(`${tried} cases, ${failures.length} wrong, RSS ${rssMb(pid).toFixed(0)} MiB`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  clearInterval(sampler);
  const crashed = server.child.exitCode !== null || server.child.signalCode !== null;
  const endRss = rssMb(pid);
  const peak = Math.max(peakRss, Number(/VmHWM:\s+(\d+)/.exec(crashed ? '' : readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024);
  await server.stop();
  rmSync(dir, { recursive: true, force: true });

  console.log(`\nseed ${SEED}: ${tried} cases in ${((Date.now() - started) / 1000).toFixed(1)} s (${clientRefused} not sendable by an HTTP client)`);
  console.log(`answers by status: ${[...byStatus].sort(([a], [b]) => a - b).map(([s, n]) => `${s}×${n}`).join(', ')}`);
  console.log(`server RSS: ${startRss.toFixed(0)} MiB at start, ${endRss.toFixed(0)} MiB at the end, peak ${peak.toFixed(0)} MiB (limit ${MAX_RSS_MB} MiB)`);
  if (crashed) failures.push(`the server died:\n${server.output().slice(-3000)}`);
  if (peak > MAX_RSS_MB) failures.push(`peak RSS ${peak.toFixed(0)} MiB is above ${MAX_RSS_MB} MiB`);
  if (failures.length > 0) {
    const groups = new Map<string, number>();
    for (const f of failures) {
      const where = /\n {2}(\S+ [^?\s]+)/.exec(f)?.[1] ?? f.split('\n')[0]!;
      const what = f.split(/[:\n]/)[0]!;
      groups.set(`${what} at ${where}`, (groups.get(`${what} at ${where}`) ?? 0) + 1);
    }
    console.log(`\n${failures.length} wrong answers, by kind and route:`);
    for (const [k, n] of [...groups].sort((a, b) => b[1] - a[1])) console.log(`  ${n}× ${k}`);
    console.log(`\nthe first 20:`);
    for (const f of failures.slice(0, 20)) console.log(`- ${f}`);
    process.exit(1);
  }
  console.log('every answer was right');
}

await main();
