/**
 * The retry schedule is rows, not timers: the process that made the first attempt is stopped,
 * a new `pigeon worker` picks the schedule up. Real processes, trusting the test CA through
 * NODE_EXTRA_CA_CERTS as an operator would.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../src/store/connect.ts';
import { migrateToLatest } from '../../src/store/migrate.ts';
import { makeTestCa, startReceiver, type Receiver, type TestCa } from './webhooks-receiver.ts';
import { createCustomer } from '../helpers/customers.ts';
import { serviceContext } from '../helpers/test-store.ts';

const DELAYS = [0, 2000, 300];

let ca: TestCa;
let receiver: Receiver;
let dir: string;
const children: ChildProcess[] = [];

before(async () => {
  ca = makeTestCa();
  receiver = await startReceiver(ca, () => ({ status: 500 }));
  dir = mkdtempSync(join(tmpdir(), 'pigeon-restart-'));
});
after(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await receiver.close();
  ca.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function until<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

function pigeon(args: string[], env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn(process.execPath, ['bin/pigeon', ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  return child;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

test('the retry schedule resumes in a new worker process after a restart mid-schedule', async () => {
  const databaseUrl = `sqlite:${join(dir, 'pigeon.db')}`;
  const port = await freePort();
  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    NODE_EXTRA_CA_CERTS: ca.caFile,
    WEBHOOK_ALLOW_PRIVATE: 'true',
    WEBHOOK_RETRY_DELAYS_MS: DELAYS.join(','),
    SIM_DELIVERY_DELAY_MS: '50',
    LOG_LEVEL: 'warn',
  };
  const store = openStore(databaseUrl);
  await migrateToLatest(store.db);
  const ctx = serviceContext(store, env);
  const { key } = await createCustomer(ctx, { name: 'Restart', email: 'restart@example.com', credits: 10 });

  const serve = pigeon(['serve'], env);
  await until('the server', async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.ok);
  const sent = await fetch(`http://127.0.0.1:${port}/v1/sms/send`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    // ...1111 never gets a receipt, so sms.sent is the only event; localhost goes through DNS.
    body: JSON.stringify({ to: '+447911121111', from: 'Acme', message: 'hi', callback_url: `https://localhost:${receiver.port}/hook` }),
  });
  assert.equal(sent.status, 200);
  const messageId = (await sent.json()).message_id as string;
  await until('the first attempt', () => receiver.received.length >= 1);
  await stop(serve);
  const event = await until('the first attempt recorded', async () => {
    const row = await store.db.selectFrom('webhook_events').selectAll().where('message_id', '=', messageId).executeTakeFirst();
    return row && row.attempts === 1 ? row : undefined;
  });
  assert.equal(event.status, 'pending');
  assert.equal(receiver.received.length, 1, 'stopped before the second attempt was due');

  const worker = pigeon(['worker'], env);
  const done = await until('undelivered', async () => {
    const row = await store.db.selectFrom('webhook_events').selectAll().where('id', '=', event.id).executeTakeFirst();
    return row?.status === 'undelivered' ? row : undefined;
  });
  await stop(worker);

  assert.equal(done.attempts, DELAYS.length);
  assert.equal(receiver.received.length, DELAYS.length);
  assert.equal(new Set(receiver.received.map((r) => r.body)).size, 1, 'byte-identical bodies');
  assert.deepEqual(new Set(receiver.received.map((r) => r.headers['x-pigeon-event-id'])), new Set([event.id]));
  const attempts = await store.db.selectFrom('webhook_attempts').selectAll().where('event_id', '=', event.id).orderBy('attempt').execute();
  assert.deepEqual(attempts.map((a) => a.http_status), [500, 500, 500]);
  for (let i = 1; i < attempts.length; i++) {
    assert.ok(Number(attempts[i]!.attempted_at) - Number(attempts[i - 1]!.attempted_at) >= DELAYS[i]!, `attempt ${i + 1} not before its delay`);
  }
  await store.close();
});
