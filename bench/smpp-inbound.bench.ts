/**
 * Inbound SMPP throughput: a local SMSC (bench/smpp-smsc.ts, its own process) sends deliver_sm to a
 * number assigned to an account, 50 unanswered at a time, to Pigeon (`start()` with API and
 * workers, SQLite file store). Pigeon answers each only once the message is stored with its
 * `sms.received` event queued, so the figure (messages per second from the first deliver_sm to the
 * last answer) is the rate of inbound messages stored and events queued. Bounded: gives up after
 * 45 s. Last stdout line: JSON figures. The goal is at least the outbound SMPP rate.
 *
 *   node --import tsx bench/smpp-inbound.bench.ts [messages]      (default 20,000)
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { figure } from './lib.ts';
import type { SmppCarrier } from '../src/carriers/smpp/smpp-carrier.ts';
import { start } from '../src/runtime.ts';
import { createAccount } from '../src/services/accounts/accounts.ts';
import { setEventsUrl } from '../src/services/accounts/events-url.ts';
import { assignNumber } from '../src/services/numbers/numbers.ts';

const TOTAL = Number(process.argv[2] ?? 20_000);
const WINDOW = 50;
const NUMBER = '+447700900100';
const DEADLINE_MS = 45_000;

async function main(): Promise<void> {
  const smsc = fork(fileURLToPath(new URL('./smpp-smsc.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const reply = <T>() => new Promise<T>((resolve) => smsc.once('message', (m) => resolve(m as T)));
  const { port: smscPort } = await reply<{ port: number }>();
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-smpp-inbound-bench-'));
  const running = await start({
    api: true,
    workers: true,
    env: {
      CARRIER: 'smpp',
      SMPP_HOST: '127.0.0.1',
      SMPP_PORT: String(smscPort),
      SMPP_SYSTEM_ID: 'bench',
      SMPP_PASSWORD: 'bench',
      DATABASE_URL: `sqlite:${join(dir, 'pigeon.db')}`,
      PORT: '0',
      SMPP_SERVER_PORT: '0',
      HOST: '127.0.0.1',
      // The refused event deliveries log a warning each.
      LOG_LEVEL: 'error',
    },
  });
  const { ctx } = running;
  try {
    await (running.carrier as SmppCarrier).whenBound();
    const account = await createAccount(ctx, { name: 'Bench', email: 'bench@example.com' });
    await assignNumber(ctx, account.id, NUMBER);
    // The events are queued for this URL; their delivery (refused: a loopback target) is not measured.
    if (!process.env.BENCH_NO_EVENTS) await setEventsUrl(ctx, account.id, 'https://127.0.0.1:9/events');

    const timer = setTimeout(() => {
      console.error(`inbound bench: no end after ${DEADLINE_MS} ms`);
      process.exit(1);
    }, DEADLINE_MS);
    const cpuBefore = process.cpuUsage();
    smsc.send({ cmd: 'inbound', count: TOTAL, window: WINDOW, to: NUMBER });
    const result = await reply<{ ok: number; failed: number; ms: number }>();
    clearTimeout(timer);
    const stored = Number((await ctx.store.db.selectFrom('inbound_messages').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    const events = Number((await ctx.store.db.selectFrom('webhook_events').select((eb) => eb.fn.countAll<number>().as('n')).where('event', '=', 'sms.received').executeTakeFirstOrThrow()).n);
    const rate = Math.round((result.ok / result.ms) * 1000);
    const cpu = process.cpuUsage(cpuBefore);
    const cpuMs = Math.round((cpu.user + cpu.system) / 1000);
    console.log(`SMPP inbound bench: ${result.ok} answered OK (${result.failed} not) in ${result.ms} ms (${rate} msg/s); ${stored} stored, ${events} sms.received events queued; Pigeon's process used ${cpuMs} ms of CPU`);
    console.log(
      JSON.stringify({
        figures: [
          figure('SMPP inbound to stored and event queued', rate, 'msg/s', { min: 3000 }),
          // On a shared machine the rate follows the load; Pigeon's own cost per message does not.
          figure('SMPP inbound Pigeon CPU per message', Math.round((cpuMs / Math.max(1, result.ok)) * 1000), 'µs'),
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
