/**
 * The contenders of the peer race, each started afresh on its own local SMSC (bench/smpp-smsc.ts)
 * and stopped after its round, so no round inherits another's queue: Kannel (Debian's `kannel`
 * package, bearerbox + smsbox with a file store, receipts requested to a local sink) and Pigeon
 * (`pigeon serve`, with its workers on the SMPP carrier or `--no-workers`).
 */
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort, startPigeon, stopChildren } from '../test/helpers/processes.ts';
import { freshDatabase, prepareCustomer } from './setup.ts';
import { queueDepth } from './lib.ts';

/** "2 cores, load 3.1 2.8 2.5": printed beside every figure, since the machine is shared. */
export function machine(): string {
  return `${cpus().length} cores, load ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`;
}

export function ensureKannel(): boolean {
  if (existsSync('/usr/sbin/bearerbox') && existsSync('/usr/sbin/smsbox')) return true;
  try {
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'ignore' });
    execFileSync('apt-get', ['install', '-y', '-qq', 'kannel'], { stdio: 'ignore', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  } catch {
    return false;
  }
  return existsSync('/usr/sbin/bearerbox');
}

export interface Smsc {
  port: number;
  /** Submits acknowledged so far. */
  acknowledged(): Promise<number>;
  stop(): Promise<void>;
}

export async function startSmsc(): Promise<Smsc> {
  const child = fork(fileURLToPath(new URL('./smpp-smsc.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const reply = <T>() => new Promise<T>((resolve) => child.once('message', (m) => resolve(m as T)));
  const { port } = await reply<{ port: number }>();
  return {
    port,
    async acknowledged() {
      child.send({ cmd: 'stats' });
      return (await reply<{ acknowledged: number }>()).acknowledged;
    },
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send({ cmd: 'stop' });
      await Promise.race([exited, sleep(3000)]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

export interface Contender {
  /** The URL autocannon loads (GET for Kannel, POST for Pigeon). */
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  smsc: Smsc;
  /** The processes doing the contender's work, for their CPU time (PostgreSQL's apart). */
  pids: number[];
  /** Messages whose end was reported back: Kannel's delivered DLRs on its dlr-url (Pigeon's webhooks are counted by their receiver). */
  completed(): number;
  /** Messages accepted and not yet handed to the SMSC, where the contender tells (Pigeon's dispatch queue). */
  backlog(): Promise<number | null>;
  stop(): Promise<void>;
}

export async function startKannel(): Promise<Contender> {
  const smsc = await startSmsc();
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-kannel-'));
  const children: ChildProcess[] = [];
  // Receipts requested with dlr-mask 3 come back here: type 1 is delivered.
  let delivered = 0;
  const sink = createServer((req, res) => {
    if (req.url?.includes('status=1&') || req.url?.endsWith('status=1')) delivered++;
    res.end('ok');
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  const sinkPort = (sink.address() as { port: number }).port;
  const [adminPort, boxPort, sendPort] = [await freePort(), await freePort(), await freePort()];
  const config = join(dir, 'kannel.conf');
  writeFileSync(
    config,
    `group = core
admin-port = ${adminPort}
admin-interface = 127.0.0.1
admin-password = bench
status-password = bench
smsbox-port = ${boxPort}
smsbox-interface = 127.0.0.1
log-file = "${dir}/bearerbox.log"
log-level = 3
store-type = file
store-location = "${dir}/kannel.store"
dlr-storage = internal

group = smsc
smsc = smpp
smsc-id = local
host = 127.0.0.1
port = ${smsc.port}
transceiver-mode = true
smsc-username = bench
smsc-password = bench
system-type = ""
max-pending-submits = 50
msg-id-type = 0x00

group = smsbox
bearerbox-host = 127.0.0.1
bearerbox-port = ${boxPort}
sendsms-port = ${sendPort}
sendsms-interface = 127.0.0.1
log-file = "${dir}/smsbox.log"
log-level = 3

group = sendsms-user
username = bench
password = bench
max-messages = 1
`,
  );
  const stop = async () => {
    await stopChildren(children);
    sink.close();
    await smsc.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    children.push(spawn('/usr/sbin/bearerbox', [config], { stdio: 'ignore' }));
    // smsbox connects to bearerbox once: start it when bearerbox's admin interface answers.
    const deadline = Date.now() + 20_000;
    while (!(await fetch(`http://127.0.0.1:${adminPort}/status.txt?password=bench`).then(() => true, () => false))) {
      if (Date.now() > deadline) throw new Error('Kannel bearerbox did not start');
      await sleep(100);
    }
    children.push(spawn('/usr/sbin/smsbox', [config], { stdio: 'ignore' }));
    for (;;) {
      try {
        const status = await (await fetch(`http://127.0.0.1:${adminPort}/status.txt?password=bench`)).text();
        if (/online/i.test(status)) break;
      } catch {
        // not up yet
      }
      if (Date.now() > deadline) throw new Error('Kannel did not bind to the SMSC');
      await sleep(300);
    }
    // The SMSC can be bound before smsbox listens: a run that started then was all refusals.
    while (!(await fetch(`http://127.0.0.1:${sendPort}/`).then(() => true, () => false))) {
      if (Date.now() > deadline) throw new Error('Kannel smsbox did not start');
      await sleep(100);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  const dlrUrl = encodeURIComponent(`http://127.0.0.1:${sinkPort}/dlr?id=%i&status=%d`);
  return {
    url: `http://127.0.0.1:${sendPort}/cgi-bin/sendsms?username=bench&password=bench&from=Bench&to=%2B14155552671&text=Your+code+is+123456&dlr-mask=3&dlr-url=${dlrUrl}`,
    smsc,
    pids: children.map((c) => c.pid!),
    completed: () => delivered,
    backlog: async () => null,
    stop,
  };
}

/**
 * `pigeon serve` on a fresh SQLite file or PostgreSQL schema: with its workers on the SMPP carrier
 * (the default `serve`, dispatching while it accepts, as Kannel does), or acceptance only
 * (`--no-workers`). `env` adds settings, `nodeArgs` flags for node (a CPU profile), `body` what
 * each send asks for.
 */
export async function startPigeonContender(
  workers: boolean,
  opts: { store?: string; env?: Record<string, string>; nodeArgs?: string[]; body?: Record<string, unknown>; serveArgs?: string[] } = {},
): Promise<Contender & { databaseUrl: string }> {
  const smsc = await startSmsc();
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-race-'));
  const fresh = await freshDatabase(opts.store ?? 'sqlite', dir, 'race');
  // Named, so that PostgreSQL's backends working for this server can be told from others.
  const databaseUrl = opts.store === 'postgres' ? `${fresh}&application_name=bench_contender` : fresh;
  const { key } = await prepareCustomer(databaseUrl);
  const port = await freePort();
  const server = await startPigeon(workers ? ['serve', ...(opts.serveArgs ?? [])] : ['serve', '--no-workers'], {
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    SMPP_SERVER_PORT: '0',
    RATE_LIMIT_MAX: '100000000',
    // The race measures acceptance against Kannel's, which queues without a bound.
    DISPATCH_BACKLOG_LIMIT: '100000000',
    DISPATCH_BACKLOG_ACCOUNT_SHARE: '100',
    CARRIER: 'smpp',
    SMPP_HOST: '127.0.0.1',
    SMPP_PORT: String(smsc.port),
    SMPP_SYSTEM_ID: 'bench',
    SMPP_PASSWORD: 'bench',
    SMPP_WINDOW: '50',
    SMPP_TPS: '0',
    ...opts.env,
  }, 30_000, opts.nodeArgs);
  // Ready: the database answers and, with workers, the SMPP carrier is bound.
  const deadline = Date.now() + 20_000;
  while ((await fetch(`http://127.0.0.1:${port}/ready`).catch(() => null))?.status !== 200) {
    if (Date.now() > deadline) throw new Error(`pigeon did not become ready:\n${server.output()}`);
    await sleep(200);
  }
  return {
    url: `http://127.0.0.1:${port}/v1/sms/send`,
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ to: '+14155552671', from: 'Bench', message: 'Your code is 123456', ...opts.body }),
    smsc,
    databaseUrl,
    // serve's delivery process works for it too: its CPU counts (docs/architecture.md).
    pids: [server.child.pid!, ...server.deliveryPids()],
    completed: () => 0,
    backlog: () => queueDepth(`http://127.0.0.1:${port}`),
    async stop() {
      await server.stop();
      await smsc.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
