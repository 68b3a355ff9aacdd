/**
 * `pigeon dev-webhook`: a local HTTPS receiver whose printed settings are enough for a client to
 * trust and reach it, and which checks each event's signature with the account's secret.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signWebhook } from '../../src/domain/webhook-signature.ts';

function post(url: string, ca: Buffer, body: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', ca, headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('dev-webhook prints its settings, serves HTTPS with its certificate on 127.0.0.1, and checks signatures', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-dev-webhook-'));
  const secret = 'whsec_devwebhooktestsecret';
  const child = spawn('./bin/pigeon', ['dev-webhook', '--port', '0', '--secret', secret, '--dir', dir, '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const lines = async (n: number) => {
    const deadline = Date.now() + 30_000;
    while (out.split('\n').filter(Boolean).length < n) {
      if (Date.now() > deadline || child.exitCode !== null) assert.fail(`dev-webhook printed:\n${out}\n${err}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return out.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, any>);
  };
  try {
    const [settings] = await lines(1);
    assert.match(settings!.callback_url, /^https:\/\/127\.0\.0\.1:\d+\/webhook$/);
    assert.deepEqual(settings!.env, { WEBHOOK_ALLOW_PRIVATE: 'true', NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem') });
    const ca = readFileSync(settings!.env.NODE_EXTRA_CA_CERTS);

    const body = JSON.stringify({ event: 'sms.delivered', message_id: 'msg_1', status: 'delivered' });
    const signature = signWebhook(body, secret, Math.floor(Date.now() / 1000));
    assert.equal(await post(settings!.callback_url, ca, body, { 'x-pigeon-signature': signature, 'x-pigeon-event-id': 'evt_1' }), 200);
    assert.equal(await post(settings!.callback_url, ca, body, { 'x-pigeon-signature': signWebhook(body, 'whsec_other', Math.floor(Date.now() / 1000)), 'x-pigeon-event-id': 'evt_2' }), 200);
    const [, first, second] = await lines(3);
    assert.equal(first!.event_id, 'evt_1');
    assert.equal(first!.signature, 'valid');
    assert.deepEqual(first!.body, JSON.parse(body));
    assert.equal(second!.signature, 'INVALID');
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
});
