/**
 * The first hour, as the README and docs/guides/webhooks.md ("Trying it on one machine") walk a
 * newcomer through it, with nothing else: the operator's commands make an account, a key and an
 * approved Sender ID; `pigeon dev-webhook` starts a receiver; the server starts with exactly the
 * settings the receiver printed; a send with the printed `callback_url` ends in a delivered
 * webhook whose signature the receiver finds valid. Everything on 127.0.0.1.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../helpers/processes.ts';

const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));

interface Running {
  child: ChildProcess;
  output: () => string;
  stop: () => Promise<void>;
}

function run(args: string[], env: NodeJS.ProcessEnv): Running {
  let output = '';
  const child = spawn('./bin/pigeon', args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    child,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, context: () => string, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}:\n${context()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function cli(env: NodeJS.ProcessEnv, args: string[]): Record<string, any> {
  const result = spawnSync('./bin/pigeon', [...args, '--json'], { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 });
  assert.equal(result.status, 0, `pigeon ${args.join(' ')}: ${result.stderr}${result.stdout}`);
  return JSON.parse(result.stdout) as Record<string, any>;
}

test('README and the webhooks guide, followed as written, reach a delivered, validly signed webhook on loopback', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-first-hour-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_OPTIONS: '',
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: `sqlite:${join(dir, 'pigeon.db')}`,
    LOG_LEVEL: 'warn',
    SMTP_URL: '',
  };
  const started: Running[] = [];
  try {
    // The quick start: `npm start` (here `pigeon serve`, which `npm start` runs).
    let server = run(['serve'], env);
    started.push(server);
    await until('the server', async () => ((await fetch(`${url}/health`).catch(() => undefined))?.ok ? true : undefined), server.output);

    // README walk-through, steps 1 to 4.
    const account = cli(env, ['account', 'create', '--name', 'Acme Ltd', '--email', 'ops@acme.test', '--credits', '100']);
    const key = cli(env, ['key', 'create', account.id, '--label', 'production']).key as string;
    const registered = await fetch(`${url}/v1/sms/sender-ids`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Acme' }),
    });
    assert.equal(registered.status, 201, await registered.text());
    const pending = cli(env, ['sender-id', 'list', '--status', 'pending', '--account', account.id]);
    cli(env, ['sender-id', 'approve', pending.data[0].id]);

    // The webhooks guide: the receiver, started with the account's secret as `account show` gives it.
    const secret = cli(env, ['account', 'show', account.id]).webhook_secret as string;
    assert.match(secret, /^whsec_/);
    const receiver = run(['dev-webhook', '--secret', secret, '--port', '0', '--dir', join(dir, 'dev-webhook'), '--json'], env);
    started.push(receiver);
    const lines = () =>
      receiver
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, any>);
    const settings = await until('the receiver settings', () => lines()[0], receiver.output);

    // Restart the server with the two settings the receiver printed, and nothing else.
    await server.stop();
    server = run(['serve'], { ...env, ...settings.env });
    started.push(server);
    await until('the restarted server', async () => ((await fetch(`${url}/health`).catch(() => undefined))?.ok ? true : undefined), server.output);

    const sent = await fetch(`${url}/v1/sms/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ to: '+14155552671', from: 'Acme', message: 'Hello', callback_url: settings.callback_url }),
    });
    const body = (await sent.json()) as Record<string, any>;
    assert.equal(sent.status, 200, JSON.stringify(body));

    const delivered = await until(
      'sms.delivered at the receiver',
      () => lines().find((l) => l.body?.event === 'sms.delivered' && l.body?.message_id === body.message_id),
      () => `receiver:\n${receiver.output()}\nserver:\n${server.output()}`,
    );
    assert.equal(delivered.signature, 'valid');
    const events = lines().filter((l) => l.body?.message_id === body.message_id);
    assert.ok(events.some((l) => l.body.event === 'sms.sent' && l.signature === 'valid'), JSON.stringify(events));
  } finally {
    for (const p of started.reverse()) await p.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
