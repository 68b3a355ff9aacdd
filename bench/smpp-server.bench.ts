/**
 * Pigeon as an SMSC (DECISIONS.md §10), through a real `pigeon serve` (workers on, the simulator
 * delivering). First, on the fresh server, receipts at a steady submit rate over 4 transceiver
 * binds: received per second, and whether the receipt queue stays flat (grows by under 2 % of the
 * submits). Then submit_sm per second flat out over the 4 binds (50 unanswered per bind, no
 * receipts asked for) against POST /v1/sms/send under 64 connections (no webhook asked for), so
 * that both carry the same work, interleaved round by round with the spread printed. Last, the
 * rate at which queued receipts reach a receiver that binds after them. The ESMEs and autocannon
 * run in processes of their own (bench/smpp-esme-load.ts).
 *
 *   node --import tsx bench/smpp-server.bench.ts [seconds per round] [rounds] [sqlite|postgres] [receipts] [steady submit_sm/s=2000]
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSmppUser } from '../src/services/smpp-access/smpp-users.ts';
import { openStore } from '../src/store/connect.ts';
import { freePort, startPigeon } from '../test/helpers/processes.ts';
import { serviceContext } from '../test/helpers/test-store.ts';
import { cpuTicks, figure, load, median, report } from './lib.ts';
import { freshDatabase, prepareCustomer } from './setup.ts';

const SECONDS = Number(process.argv[2] ?? 10);
const ROUNDS = Number(process.argv[3] ?? 3);
const STORE = process.argv[4] ?? 'sqlite';
const RECEIPTS = Number(process.argv[5] ?? 5000);
const STEADY_RATE = Number(process.argv[6] ?? 2000);

const spread = (xs: number[]) => `${Math.round(Math.min(...xs))}-${Math.round(Math.max(...xs))}`;

const dir = mkdtempSync(join(tmpdir(), 'pigeon-smpp-server-bench-'));
const esme = fork(fileURLToPath(new URL('./smpp-esme-load.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
const ask = <T>(msg: object) =>
  new Promise<T>((resolve) => {
    esme.once('message', (m) => resolve(m as T));
    esme.send(msg);
  });
await new Promise((resolve) => esme.once('message', resolve));
try {
  const databaseUrl = await freshDatabase(STORE, dir, 'smppserver');
  const { accountId, key } = await prepareCustomer(databaseUrl);
  const store = openStore(databaseUrl);
  const user = await createSmppUser(serviceContext(store, { DATABASE_URL: databaseUrl }), accountId, { systemId: 'bench', tps: 10_000, maxBinds: 8 });
  const port = await freePort();
  const smppPort = await freePort();
  const server = await startPigeon(['serve'], {
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    SMPP_SERVER_PORT: String(smppPort),
    SIM_DELIVERY_DELAY_MS: '0',
    RATE_LIMIT_MAX: '100000000',
    DISPATCH_BACKLOG_LIMIT: '100000000',
  });
  const smpp = { port: smppPort, systemId: user.system_id, password: user.password };
  const http: { rate: number; p99: number }[] = [];
  const binds: { rate: number; p99: number }[] = [];
  const count = async () => Number((await store.db.selectFrom('smpp_outbox').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
  try {
    // First, on the fresh server: receipts at a steady submit rate, received as they come. The
    // binds keep up with it if the receipt queue stays flat: its depth is read a third of the way
    // in and again near the end, both under the load (a count after it would take the pipeline's
    // last fraction of a second for growth).
    const sampleAt = (ms: number) => new Promise<number>((resolve) => setTimeout(() => void count().then(resolve), ms));
    const [steady, early, late] = await Promise.all([
      ask<{ perSecond: number; p99: number; receiptsPerSecond: number }>({ cmd: 'raw-submit', ...smpp, binds: 4, window: 50, seconds: SECONDS, rate: STEADY_RATE }),
      sampleAt((SECONDS * 1000) / 3),
      sampleAt(SECONDS * 1000 - 500),
    ]);
    const queueGrowth = (late - early) / (SECONDS * (2 / 3) - 0.5);
    console.error(
      `# steady ${STEADY_RATE} submit_sm/s offered: ${Math.round(steady.perSecond)} accepted, p99 ${steady.p99.toFixed(1)} ms, ${Math.round(steady.receiptsPerSecond)} receipts/s received, receipt queue ${early} then ${late} (${Math.round(queueGrowth)}/s)`,
    );
    for (let round = 0; round < ROUNDS; round++) {
      const pid = server.child.pid!;
      let ticks = cpuTicks(pid);
      const r = await load(`http://127.0.0.1:${port}/v1/sms/send`, {
        connections: 64,
        seconds: SECONDS,
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ to: '+14155552671', from: 'Bench', message: 'Your code is 123456' }),
      });
      http.push({ rate: r.requestsPerSecond, p99: r.p99 });
      // The server's CPU per accepted message, in microseconds (ticks are 1/100 s).
      const perMessage = (rate: number) => {
        const used = cpuTicks(pid) - ticks;
        ticks = cpuTicks(pid);
        return Math.round((used * 10_000) / (rate * SECONDS));
      };
      const httpCpu = perMessage(r.requestsPerSecond);
      const esmeTicks = cpuTicks(esme.pid!);
      // No receipts asked for: the HTTP sends ask for no webhook either, so both carry the same work
      // (receipts are measured at a steady rate above).
      const s = await ask<{ perSecond: number; p99: number; refused: number; receiptsPerSecond: number }>({ cmd: 'raw-submit', ...smpp, binds: 4, window: 50, seconds: SECONDS, receipts: false });
      const smppCpu = perMessage(s.perSecond);
      const esmeCpu = Math.round(((cpuTicks(esme.pid!) - esmeTicks) * 10_000) / (s.perSecond * SECONDS));
      if (s.refused > 0) console.error(`# ${s.refused} submits refused`);
      binds.push({ rate: s.perSecond, p99: s.p99 });
      console.error(
        `# round ${round + 1}: HTTP ${Math.round(r.requestsPerSecond)} req/s p99 ${r.p99} ms (server ${httpCpu} µs CPU each); SMPP ${Math.round(s.perSecond)} submit_sm/s p99 ${s.p99.toFixed(1)} ms (server ${smppCpu} µs, ESMEs ${esmeCpu} µs each), ${await count()} receipts waiting after`,
      );
    }
    // Receipts queued while no receiver is bound, then delivered to one that binds.
    const before = await count();
    await ask({ cmd: 'queue', ...smpp, count: RECEIPTS });
    const deadline = Date.now() + 120_000;
    while ((await count()) < before + RECEIPTS && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
    const waiting = await count();
    const drained = await ask<{ perSecond: number; ms: number }>({ cmd: 'drain', ...smpp, count: waiting });
    console.error(`# ${waiting} receipts delivered to a new receiver bind in ${drained.ms} ms`);
    const httpRate = median(http.map((x) => x.rate));
    const smppRate = median(binds.map((x) => x.rate));
    console.error(`# spread over ${ROUNDS} rounds: HTTP ${spread(http.map((x) => x.rate))} req/s, SMPP ${spread(binds.map((x) => x.rate))} submit_sm/s`);
    report([
      figure(`SMPP server (${STORE}) submit_sm/s over 4 binds, median`, smppRate, 'msg/s'),
      figure(`SMPP server (${STORE}) submit_sm p99, median`, median(binds.map((x) => x.p99)), 'ms'),
      figure(`SMPP server (${STORE}) HTTP send req/s beside it, median`, httpRate, 'req/s'),
      figure(`SMPP server (${STORE}) HTTP send p99, median`, median(http.map((x) => x.p99)), 'ms'),
      figure(`SMPP server (${STORE}) submit_sm/s / HTTP req/s`, (smppRate / httpRate) * 100, '%'),
      figure(`SMPP server (${STORE}) receipts received at a steady ${STEADY_RATE} submit_sm/s`, steady.receiptsPerSecond, 'msg/s'),
      figure(`SMPP server (${STORE}) receipt queue growth at that rate, share of the submits`, queueGrowth / Math.max(1, steady.perSecond), 'ratio', { max: 0.02 }),
      figure(`SMPP server (${STORE}) queued receipts delivered to a receiver`, drained.perSecond, 'msg/s'),
    ]);
  } finally {
    await server.stop();
    await store.close();
  }
} finally {
  esme.send({ cmd: 'stop' });
  rmSync(dir, { recursive: true, force: true });
}
