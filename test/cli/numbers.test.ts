/**
 * `pigeon number assign|release|list` through real child processes, and a running server (another
 * process) that applies a release at the very next send.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, pigeonCli, startPigeon, type PigeonProcess } from '../helpers/processes.ts';
import { processDatabase } from '../helpers/test-store.ts';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'pigeon-numbers-'));
const database = processDatabase('numbers_cli', dir);
const env = { ...process.env, DATABASE_URL: database.url, LOG_LEVEL: 'warn' };

const pigeon = (...args: string[]) => pigeonCli(env, ...args);

describe('pigeon number', () => {
  let server: PigeonProcess;
  let port: number;
  let accountId: string;
  let key: string;

  before(async () => {
    await database.open();
    const created = await pigeon('account', 'create', '--name', 'Acme Ltd', '--email', 'ops@acme.test', '--credits', '50');
    assert.equal(created.code, 0, created.stderr);
    accountId = created.json.id;
    const made = await pigeon('key', 'create', accountId, '--label', 'live');
    assert.equal(made.code, 0, made.stderr);
    key = made.json.key;
    port = await freePort();
    server = await startPigeon(['serve', '--no-workers'], { DATABASE_URL: database.url, PORT: String(port) });
  });
  after(async () => {
    await server?.stop();
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const send = (from: string) =>
    fetch(`http://127.0.0.1:${port}/v1/sms/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ to: '+447911123456', from, message: 'hi' }),
    });

  test('assign, list, send from it, release: the server in another process refuses the next send', async () => {
    const assigned = await pigeon('number', 'assign', accountId, '+44 7700 900123', '--label', 'Support');
    assert.equal(assigned.code, 0, assigned.stderr);
    assert.equal(assigned.json.number, '+447700900123');
    assert.equal(assigned.json.account_id, accountId);
    assert.equal(assigned.json.label, 'Support');
    assert.match(assigned.json.created_at, /^\d{4}-\d\d-\d\dT/);

    const listed = await pigeon('number', 'list', '--account', accountId);
    assert.deepEqual(Object.keys(listed.json), ['data']);
    assert.deepEqual(listed.json.data.map((n: { number: string }) => n.number), ['+447700900123']);
    assert.deepEqual(Object.keys(listed.json.data[0]).sort(), ['account_id', 'created_at', 'label', 'number', 'sms_url']);
    assert.deepEqual((await pigeon('number', 'list', '--account', 'acc_other')).json.data, []);

    const api = await fetch(`http://127.0.0.1:${port}/v1/numbers`, { headers: { authorization: `Bearer ${key}` } });
    assert.deepEqual((await api.json()).data.map((n: { number: string }) => n.number), ['+447700900123']);

    const ok = await send('+447700900123');
    assert.equal(ok.status, 200, await ok.clone().text());
    assert.equal((await ok.json()).from, '+447700900123');

    const released = await pigeon('number', 'release', '+447700900123');
    assert.equal(released.code, 0, released.stderr);
    assert.equal(released.json.account_id, accountId);
    const refused = await send('+447700900123');
    assert.equal(refused.status, 400);
    assert.equal((await refused.json()).code, 'invalid_sender_id');
  });

  test('account twilio-credentials shows the token once, rotates it, and the server takes both for a day; number assign --sms-url', async () => {
    const first = await pigeon('account', 'twilio-credentials', accountId);
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(Object.keys(first.json).sort(), ['account_sid', 'auth_token']);
    assert.match(first.json.account_sid, /^AC[0-9a-f]{32}$/);
    assert.match(first.json.auth_token, /^[0-9a-f]{32}$/);
    const again = await pigeon('account', 'twilio-credentials', accountId);
    assert.deepEqual(again.json, { account_sid: first.json.account_sid, auth_token: `${'*'.repeat(28)}${first.json.auth_token.slice(-4)}` });
    const rotated = await pigeon('account', 'twilio-credentials', accountId, '--rotate');
    assert.equal(rotated.json.account_sid, first.json.account_sid, 'the SID never changes');
    assert.match(rotated.json.auth_token, /^[0-9a-f]{32}$/);
    assert.notEqual(rotated.json.auth_token, first.json.auth_token);
    const text = await run('./bin/pigeon', ['account', 'twilio-credentials', accountId], { env });
    assert.match(text.stdout, new RegExp(`Account SID: ${first.json.account_sid}`));
    assert.doesNotMatch(text.stdout, new RegExp(rotated.json.auth_token));

    const [withUrl, badUrl] = await Promise.all([
      pigeon('number', 'assign', accountId, '+447700900140', '--sms-url', 'https://127.0.0.1:9/sms'),
      pigeon('number', 'assign', accountId, '+447700900141', '--sms-url', 'http://127.0.0.1:9/sms'),
    ]);
    assert.equal(withUrl.code, 0, withUrl.stderr);
    assert.equal(withUrl.json.sms_url, 'https://127.0.0.1:9/sms');
    assert.notEqual(badUrl.code, 0);
    assert.match(badUrl.stderr, /https/);

    const list = (token: string) =>
      fetch(`http://127.0.0.1:${port}/2010-04-01/Accounts/${first.json.account_sid}/Messages.json`, {
        headers: { authorization: `Basic ${Buffer.from(`${first.json.account_sid}:${token}`).toString('base64')}` },
      });
    assert.equal((await list(rotated.json.auth_token)).status, 200);
    assert.equal((await list(first.json.auth_token)).status, 200, 'the previous token works for 24 hours');
    assert.equal((await list('0'.repeat(32))).status, 401);
    const [unknown, released] = await Promise.all([pigeon('account', 'twilio-credentials', 'acc_none'), pigeon('number', 'release', '+447700900140')]);
    assert.notEqual(unknown.code, 0);
    assert.equal(released.code, 0, released.stderr);
  });

  test('a number already held, a malformed number, an unknown account: clear errors, nothing written', async () => {
    assert.equal((await pigeon('number', 'assign', accountId, '60606')).code, 0);
    const taken = await pigeon('number', 'assign', accountId, '60606');
    assert.notEqual(taken.code, 0);
    assert.match(taken.stderr, /already assigned/);
    const bad = await pigeon('number', 'assign', accountId, 'not-a-number');
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /not a number Pigeon can assign/);
    const nobody = await pigeon('number', 'assign', 'acc_none', '+447700900124');
    assert.notEqual(nobody.code, 0);
    const free = await pigeon('number', 'release', '+447700900124');
    assert.notEqual(free.code, 0);
    assert.match(free.stderr, /not assigned/);
    assert.deepEqual((await pigeon('number', 'list')).json.data.map((n: { number: string }) => n.number), ['60606']);
  });

  test('account events-url sets and clears; simulate inbound delivers to the holder or keeps it unrouted', async () => {
    const bad = await pigeon('account', 'events-url', accountId, 'http://127.0.0.1/x');
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /https/);
    const both = await pigeon('account', 'events-url', accountId, 'https://127.0.0.1:9/e', '--clear');
    assert.equal(both.code, 2);
    const set = await pigeon('account', 'events-url', accountId, 'https://127.0.0.1:9/e');
    assert.deepEqual(set.json, { id: accountId, events_url: 'https://127.0.0.1:9/e' });

    assert.equal((await pigeon('number', 'assign', accountId, '+447700900125')).code, 0);
    const delivered = await pigeon('simulate', 'inbound', '--from', '+447911123456', '--to', '+447700900125', '--message', 'Hello from the CLI');
    assert.equal(delivered.code, 0, delivered.stderr);
    assert.equal(delivered.json.account_id, accountId);
    assert.match(delivered.json.id, /^in_/);
    const listed = await fetch(`http://127.0.0.1:${port}/v1/sms/inbound`, { headers: { authorization: `Bearer ${key}` } });
    assert.deepEqual((await listed.json()).data.map((m: { id: string; message: string }) => [m.id, m.message]), [[delivered.json.id, 'Hello from the CLI']]);
    const events = await fetch(`http://127.0.0.1:${port}/v1/webhooks/events`, { headers: { authorization: `Bearer ${key}` } });
    const [event] = (await events.json()).data;
    assert.equal(event.event, 'sms.received');
    assert.equal(event.inbound_id, delivered.json.id);
    assert.equal(event.url, 'https://127.0.0.1:9/e');

    const cleared = await pigeon('account', 'events-url', accountId, '--clear');
    assert.deepEqual(cleared.json, { id: accountId, events_url: null });

    const lost = await pigeon('simulate', 'inbound', '--from', '+447911123456', '--to', '+447700900126', '--message', 'Anyone there?');
    assert.equal(lost.code, 0, lost.stderr);
    assert.equal(lost.json.account_id, null);
    const unrouted = await pigeon('inbound', 'unrouted');
    assert.deepEqual(unrouted.json.data.map((m: { id: string; to: string }) => [m.id, m.to]), [[lost.json.id, '+447700900126']]);
    const text = await run('./bin/pigeon', ['inbound', 'unrouted'], { env });
    assert.match(text.stdout, /Anyone there\?/);
    assert.equal((await pigeon('inbound', 'unrouted', '--limit', '0')).code, 2);
    const missing = await pigeon('simulate', 'inbound', '--from', '+447911123456', '--to', '+447700900126');
    assert.equal(missing.code, 2);
  });

  test('opt-out add, list and remove (source operator); a STOP cannot be removed', async () => {
    const added = await pigeon('opt-out', 'add', accountId, '+447911000401');
    assert.equal(added.code, 0, added.stderr);
    assert.deepEqual({ ...added.json, created_at: 'x' }, { phone: '+447911000401', source: 'operator', created_at: 'x', created: true });
    assert.equal((await pigeon('opt-out', 'add', accountId, '+447911000401')).json.created, false);
    assert.equal((await send('+447700900125')).status, 200, 'to another recipient');
    assert.equal((await pigeon('number', 'assign', accountId, '+447700900127')).code, 0);
    assert.equal((await pigeon('simulate', 'inbound', '--from', '+447911000402', '--to', '+447700900127', '--message', 'STOP')).code, 0);
    const list = await pigeon('opt-out', 'list', accountId);
    assert.deepEqual(list.json.data.map((o: { phone: string; source: string }) => [o.phone, o.source]), [['+447911000402', 'keyword'], ['+447911000401', 'operator']]);
    const refused = await pigeon('opt-out', 'remove', accountId, '+447911000402');
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /only their START lifts it/);
    assert.equal((await pigeon('opt-out', 'remove', accountId, '+447911000401')).code, 0);
    assert.deepEqual((await pigeon('opt-out', 'list', accountId)).json.total, 1);
  });
});
