/**
 * SMPP throughput: Pigeon (`start()` with API and workers, SQLite file store) against a local
 * SMSC (test/smpp/smsc.ts, in a child process: bench/smpp-smsc.ts) that acknowledges every
 * submit and sends a DELIVRD receipt at once; window 50, no TPS cap. Messages go in through POST /v1/sms/bulk; the figure is messages per second
 * from the first HTTP request to the last receipt applied, plus the p99 from acceptance
 * (created_at) to `sent` (sent_at). Bounded: gives up after 45 s. Last stdout line: JSON figures.
 *
 *   node --import tsx bench/smpp.bench.ts [messages]      (default 20,000)
 *
 * BENCH_TRACE=1 also prints, on stderr, each dispatch batch's submit time and the CPU the Pigeon
 * process used (the SMSC runs in its own process, so this is Pigeon's cost per message).
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { figure, percentile } from './lib.ts';
import type { SmppCarrier } from '../src/carriers/smpp/smpp-carrier.ts';
import { start } from '../src/runtime.ts';
import { createAccount } from '../src/services/accounts/accounts.ts';
import { createApiKey } from '../src/services/keys/api-keys.ts';
import { approveSenderId, registerSenderId } from '../src/services/sender-ids/sender-ids.ts';

const TOTAL = Number(process.argv[2] ?? 20_000);
const BULK = 1000;
const IN_FLIGHT = 4;
const DEADLINE_MS = 45_000;

async function main(): Promise<void> {
  const smsc = fork(fileURLToPath(new URL('./smpp-smsc.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const reply = <T>() => new Promise<T>((resolve) => smsc.once('message', (m) => resolve(m as T)));
  const { port: smscPort } = await reply<{ port: number }>();
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-smpp-bench-'));
  const running = await start({
    api: true,
    workers: true,
    env: {
      CARRIER: 'smpp',
      SMPP_HOST: '127.0.0.1',
      SMPP_PORT: String(smscPort),
      SMPP_SYSTEM_ID: 'bench',
      SMPP_PASSWORD: 'bench',
      SMPP_WINDOW: '50',
      SMPP_TPS: '0',
      DATABASE_URL: `sqlite:${join(dir, 'pigeon.db')}`,
      PORT: '0',
      SMPP_SERVER_PORT: '0',
      HOST: '127.0.0.1',
      RATE_LIMIT_MAX: '1000000',
      LOG_LEVEL: 'warn',
    },
  });
  const { ctx } = running;
  try {
    await (running.carrier as SmppCarrier).whenBound();
    if (process.env.BENCH_TRACE) {
      const carrier = running.carrier as SmppCarrier;
      const submit = carrier.submit.bind(carrier);
      carrier.submit = async (messages) => {
        const t0 = performance.now();
        const out = await submit(messages);
        console.error(`submit ${messages.length} in ${Math.round(performance.now() - t0)} ms at ${Date.now() % 100000}`);
        return out;
      };
    }
    const address = running.app!.server.address();
    const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    const account = await createAccount(ctx, { name: 'Bench', email: 'bench@example.com', credits: TOTAL * 2 });
    const { key } = await createApiKey(ctx, account.id, { label: 'bench' });
    const sender = await registerSenderId(ctx, account.id, 'Bench');
    await approveSenderId(ctx, sender.id);

    const started = Date.now();
    const cpuBefore = process.cpuUsage();
    const deadline = started + DEADLINE_MS;
    let next = 0;
    let accepted = 0;
    const post = async (): Promise<void> => {
      while (next < TOTAL && Date.now() < deadline) {
        const from = next;
        next = Math.min(TOTAL, next + BULK);
        const messages = [];
        for (let i = from; i < next; i++) messages.push({ to: `+4479${String(10_000_000 + i).slice(-8)}`, message: `Bench message ${i}` });
        const res = await fetch(`${base}/v1/sms/bulk`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ from: 'Bench', messages }),
        });
        if (res.status !== 200) throw new Error(`bulk: HTTP ${res.status} ${await res.text()}`);
        accepted += ((await res.json()) as { queued: number }).queued;
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, post));
    const acceptedMs = Date.now() - started;

    let delivered = 0;
    let sentMs = 0;
    while (Date.now() < deadline) {
      const rows = await ctx.store.db.selectFrom('messages').select(['status', (eb) => eb.fn.countAll<number>().as('n')]).groupBy('status').execute();
      const count = (status: string) => Number(rows.find((r) => r.status === status)?.n ?? 0);
      delivered = count('delivered');
      if (!sentMs && count('pending') === 0) sentMs = Date.now() - started;
      if (delivered >= accepted) break;
      await sleep(50);
    }
    const elapsedMs = Date.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    if (process.env.BENCH_TRACE) console.error(`pigeon CPU ${Math.round((cpu.user + cpu.system) / 1000)} ms for ${delivered} messages`);
    const rows = await ctx.store.db.selectFrom('messages').select(['created_at', 'sent_at']).where('sent_at', 'is not', null).execute();
    const toSent = rows.map((r) => Number(r.sent_at) - Number(r.created_at)).sort((a, b) => a - b);
    const rate = Math.round((delivered / elapsedMs) * 1000);
    smsc.send({ cmd: 'stats' });
    const stats = await reply<{ acknowledged: number; duplicates: number }>();
    console.log(
      `SMPP bench: ${accepted} accepted (all by ${acceptedMs} ms, none pending by ${sentMs} ms), ${delivered} delivered in ${elapsedMs} ms (${rate} msg/s); ` +
        `${stats.acknowledged} submits acknowledged, ${stats.duplicates} duplicates; acceptance->sent p50 ${percentile(toSent, 50)} ms, p99 ${percentile(toSent, 99)} ms`,
    );
    console.log(
      JSON.stringify({
        figures: [
          figure('SMPP submit to receipt', rate, 'msg/s', { min: 3000 }),
          figure('SMPP acceptance to sent p99', percentile(toSent, 99), 'ms'),
        ],
      }),
    );
  } finally {
    await running.stop();
    smsc.send({ cmd: 'stop' });
    await once(smsc, 'exit');
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
