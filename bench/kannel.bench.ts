/**
 * The peer: Kannel (Debian's `kannel` package: bearerbox + smsbox, file store) accepting the same
 * load on `/cgi-bin/sendsms` with delivery receipts requested, connected over SMPP to the same
 * local SMSC as Pigeon's SMPP benchmark (bench/smpp-smsc.ts). Installs Kannel with apt-get if it is
 * missing, starts it, measures, and stops it. Prints sendsms requests/s and p99, and the SMSC's
 * count of messages Kannel submitted per second during the load.
 *
 *   node --import tsx bench/kannel.bench.ts [seconds=20]
 */
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort } from '../test/helpers/processes.ts';
import { figure, load, report } from './lib.ts';

const SECONDS = Number(process.argv[2] ?? 20);
const CONNECTIONS = 64;

function ensureKannel(): boolean {
  if (existsSync('/usr/sbin/bearerbox') && existsSync('/usr/sbin/smsbox')) return true;
  try {
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'ignore' });
    execFileSync('apt-get', ['install', '-y', '-qq', 'kannel'], { stdio: 'ignore', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  } catch {
    return false;
  }
  return existsSync('/usr/sbin/bearerbox');
}

if (!ensureKannel()) {
  console.error('# kannel: could not install the kannel package; skipped');
  report([]);
  process.exit(0);
}

const dir = mkdtempSync(join(tmpdir(), 'pigeon-kannel-'));
const children: ChildProcess[] = [];
const smsc = fork(fileURLToPath(new URL('./smpp-smsc.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
const reply = <T>() => new Promise<T>((resolve) => smsc.once('message', (m) => resolve(m as T)));
try {
  const { port: smscPort } = await reply<{ port: number }>();
  const [adminPort, boxPort, sendPort] = [await freePort(), await freePort(), await freePort()];
  // Receipts are requested (dlr-mask) and reported to a local sink, as a customer would have them.
  const sink = createServer((_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  const sinkPort = (sink.address() as { port: number }).port;
  const config = join(dir, 'kannel.conf');
  writeFileSync(
    config,
    `group = core
admin-port = ${adminPort}
admin-password = bench
status-password = bench
smsbox-port = ${boxPort}
log-file = "${dir}/bearerbox.log"
log-level = 3
store-type = file
store-location = "${dir}/kannel.store"
dlr-storage = internal

group = smsc
smsc = smpp
smsc-id = local
host = 127.0.0.1
port = ${smscPort}
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
log-file = "${dir}/smsbox.log"
log-level = 3

group = sendsms-user
username = bench
password = bench
max-messages = 1
`,
  );
  children.push(spawn('/usr/sbin/bearerbox', [config], { stdio: 'ignore' }));
  await sleep(1000);
  children.push(spawn('/usr/sbin/smsbox', [config], { stdio: 'ignore' }));
  // Wait until the SMSC link is online.
  const deadline = Date.now() + 20_000;
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
  smsc.send({ cmd: 'stats' });
  const before = (await reply<{ acknowledged: number }>()).acknowledged;
  const started = performance.now();
  const dlrUrl = encodeURIComponent(`http://127.0.0.1:${sinkPort}/dlr?id=%i&status=%d`);
  const r = await load(
    `http://127.0.0.1:${sendPort}/cgi-bin/sendsms?username=bench&password=bench&from=Bench&to=%2B14155552671&text=Your+code+is+123456&dlr-mask=3&dlr-url=${dlrUrl}`,
    { connections: CONNECTIONS, seconds: SECONDS },
  );
  smsc.send({ cmd: 'stats' });
  const after = (await reply<{ acknowledged: number }>()).acknowledged;
  const elapsed = (performance.now() - started) / 1000;
  sink.close();
  report([
    figure('kannel sendsms requests/s', r.requestsPerSecond, 'req/s'),
    figure('kannel sendsms p99', r.p99, 'ms'),
    figure('kannel SMPP submits/s during the load', (after - before) / elapsed, 'msg/s'),
  ]);
} finally {
  for (const c of children.reverse()) c.kill('SIGTERM');
  smsc.send({ cmd: 'stop' });
  await sleep(1000);
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
