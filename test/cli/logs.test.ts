/**
 * What an operator reads: a line per request, the start banner with the addresses, webhook
 * failures at warn with the reason, readable lines on a terminal, and metric names said once.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import pino from 'pino';
import { buildApp } from '../../src/http/app.ts';
import { registry } from '../../src/metrics.ts';
import { createAccount } from '../../src/services/accounts/accounts.ts';
import { createApiKey } from '../../src/services/keys/api-keys.ts';
import { freePort, startPigeon } from '../helpers/processes.ts';
import { openTestStore, serviceContext } from '../helpers/test-store.ts';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'pigeon-logs-'));

function capture() {
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) {
        raw.push(line);
        lines.push(JSON.parse(line));
      }
      done();
    },
  });
  return { lines, raw, stream };
}

async function until(check: () => boolean, what: () => string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting: ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('logs', () => {
  const stores: { close(): Promise<void> }[] = [];
  after(async () => {
    for (const s of stores) await s.close();
  });

  test('one info line per request: method, path without the query, status, time, account; never the key', async () => {
    const store = await openTestStore();
    stores.push(store);
    const ctx = serviceContext(store);
    const account = await createAccount(ctx, { name: 'Logged', email: 'logged@example.com', credits: 5 });
    const { key } = await createApiKey(ctx, account.id, { label: 'log' });
    const { lines, raw, stream } = capture();
    const app = await buildApp({ ctx, logger: pino({ level: 'info' }, stream) });
    try {
      const res = await app.inject({ method: 'GET', url: '/v1/account?token=secret-in-query', headers: { authorization: `Bearer ${key}` } });
      assert.equal(res.statusCode, 200);
      await app.inject({ method: 'POST', url: '/v1/sms/send', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, payload: { to: '+447911123456', from: 'Nope', message: 'a private text' } });
      await app.inject({ method: 'GET', url: '/v1/account', headers: { authorization: 'Bearer pk_live_wrong' } });
      await app.inject({ method: 'GET', url: `/v1/${key}`, headers: { authorization: `Bearer ${key}` } });
    } finally {
      await app.close();
    }
    const requests = lines.filter((l) => l.msg === 'request');
    assert.deepEqual(
      requests.map((l: any) => [l.level, l.req.method, l.req.url, l.res.statusCode, l.req.accountId]),
      [
        [30, 'GET', '/v1/account', 200, account.id],
        [30, 'POST', '/v1/sms/send', 400, account.id],
        [30, 'GET', '/v1/account', 401, null],
        [30, 'GET', '/v1/pk_live_[redacted]', 404, null],
      ],
    );
    for (const l of requests) assert.equal(typeof l.responseTime, 'number');
    const all = raw.join('\n');
    assert.ok(!all.includes(key) && !all.includes('pk_live_wrong'), 'no key in the log');
    assert.ok(!all.includes('secret-in-query'), 'no query string in the log');
    assert.ok(!all.includes('a private text'), 'no message body in the log');
  });

  test('LOG_REQUESTS=false leaves the request lines out', async () => {
    const store = await openTestStore();
    stores.push(store);
    const { lines, stream } = capture();
    const app = await buildApp({ ctx: serviceContext(store, { LOG_REQUESTS: 'false' }), logger: pino({ level: 'info' }, stream) });
    try {
      await app.inject({ method: 'GET', url: '/health' });
    } finally {
      await app.close();
    }
    assert.equal(lines.filter((l) => l.msg === 'request').length, 0);
  });

  test('the start banner gives the addresses; a refused webhook is a warn line with the reason', async () => {
    const databaseUrl = `sqlite:${join(dir, 'banner.db')}`;
    const env = { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' };
    const cli = async (...args: string[]) => JSON.parse((await run('./bin/pigeon', [...args, '--json'], { env })).stdout);
    await cli('migrate');
    const account = await cli('account', 'create', '--name', 'Hooks', '--email', 'hooks@example.com', '--credits', '10');
    const { key } = await cli('key', 'create', account.id, '--label', 'hooks');
    const port = await freePort();
    const server = await startPigeon(['serve'], { DATABASE_URL: databaseUrl, PORT: String(port), SIM_DELIVERY_DELAY_MS: '0' });
    try {
      const started = server
        .output()
        .split('\n')
        .map((l) => (l.startsWith('{') ? JSON.parse(l) : null))
        .find((l) => l?.msg === 'pigeon started');
      assert.equal(started.api, `http://127.0.0.1:${port}/v1`);
      assert.equal(started.docs, `http://127.0.0.1:${port}/docs`);
      assert.equal(started.dashboard, `http://127.0.0.1:${port}/dashboard`);
      assert.equal(started.public_url, `http://localhost:${port}`);

      const call = (path: string, body: unknown) =>
        fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const sender = (await (await call('/v1/sms/sender-ids', { name: 'Hooks' })).json()) as { data: { id: string } };
      await cli('sender-id', 'approve', sender.data.id);
      const closed = await freePort();
      const sent = await call('/v1/sms/send', { to: '+447911123456', from: 'Hooks', message: 'hi', callback_url: `https://127.0.0.1:${closed}/hook?token=abc` });
      assert.equal(sent.status, 200);
      const warned = () =>
        server
          .output()
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as Record<string, unknown>)
          .find((l) => l.level === 40 && String(l.msg).startsWith('webhook refused'));
      await until(() => warned() !== undefined, () => server.output());
      const line = warned()!;
      assert.match(String(line.reason), /127\.0\.0\.1 .*loopback.*WEBHOOK_ALLOW_PRIVATE=true/);
      assert.equal(line.url, `https://127.0.0.1:${closed}/hook`);
      assert.equal(line.accountId, account.id);
      assert.ok(!server.output().includes(key), 'no key in the log');
    } finally {
      await server.stop();
    }
  });

  test('on a terminal (LOG_FORMAT=pretty) a line reads as a sentence', async () => {
    const child = spawn('./bin/pigeon', ['serve', '--no-workers'], {
      env: { ...process.env, DATABASE_URL: `sqlite:${join(dir, 'pretty.db')}`, PORT: '0', LOG_LEVEL: 'info', LOG_FORMAT: 'pretty' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    try {
      await until(() => /pigeon started: API/.test(out) || child.exitCode !== null, () => out);
      assert.match(out, /INFO: pigeon started: API http:\/\/127\.0\.0\.1:\d+\/v1, docs http:\/\/127\.0\.0\.1:\d+\/docs, dashboard http:\/\/127\.0\.0\.1:\d+\/dashboard/);
      assert.doesNotMatch(out, /^\{"level"/m, 'not JSON');
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });

  test('metric names say process_ once', async () => {
    const text = await registry.metrics();
    assert.match(text, /^pigeon_process_cpu_user_seconds_total /m);
    assert.match(text, /^pigeon_nodejs_heap_size_total_bytes /m);
    assert.doesNotMatch(text, /pigeon_process_process_|pigeon_process_nodejs_/);
  });
});
