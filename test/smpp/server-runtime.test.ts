/**
 * The SMPP listener inside a real `pigeon serve` (DECISIONS.md §10): started on SMPP_SERVER_PORT
 * and named in the start banner and by `pigeon doctor`; an SMPP user made with the CLI (another
 * process) binds, sends through the acceptance, and its live bind is listed by the CLI; SIGTERM
 * unbinds it. The account's rate limit counts its submits with its HTTP requests.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeGsm7 } from '../../src/carriers/smpp/gsm7.ts';
import { freePort, pigeonJson, startPigeon, type PigeonProcess } from '../helpers/processes.ts';
import { processDatabase } from '../helpers/test-store.ts';
import { bound, call, closed } from './server-fixture.ts';

const dir = mkdtempSync(join(tmpdir(), 'pigeon-smpp-server-'));
const database = processDatabase('smpp_server_runtime', dir);
let server: PigeonProcess | null = null;
let env: NodeJS.ProcessEnv;
let smppPort: number;

before(async () => {
  await database.open();
  smppPort = await freePort();
  env = { ...process.env, DATABASE_URL: database.url, LOG_LEVEL: 'warn', SMPP_SERVER_PORT: String(smppPort) };
});
after(async () => {
  await server?.stop();
  await database.close();
  rmSync(dir, { recursive: true, force: true });
});

test('pigeon serve listens on SMPP_SERVER_PORT, says so, and a CLI-made user binds, sends and is listed live; SIGTERM unbinds it', async () => {
  const account = pigeonJson(env, 'account', 'create', '--name', 'Reseller', '--email', 'ops@reseller.test', '--credits', '10');
  const user = pigeonJson<{ system_id: string; password: string }>(env, 'smpp-user', 'create', account.id, '--system-id', 'reseller', '--allow', '127.0.0.0/8');
  const { key } = pigeonJson<{ key: string }>(env, 'key', 'create', account.id, '--label', 'http');
  const port = await freePort();
  server = await startPigeon(['serve'], { DATABASE_URL: database.url, PORT: String(port), SMPP_SERVER_PORT: String(smppPort), RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_MS: '600000' });
  const banner = server.output().split('\n').find((l) => l.includes('"msg":"pigeon started"'))!;
  assert.equal(JSON.parse(banner).smpp, `127.0.0.1:${smppPort}`);

  const doctor = pigeonJson<{ checks: { name: string; ok: boolean; detail: string }[] }>({ ...env, PORT: String(port) }, 'doctor');
  const check = doctor.checks.find((c) => c.name === 'smpp_server')!;
  assert.equal(check.ok, true, check.detail);
  assert.match(check.detail, new RegExp(`127\\.0\\.0\\.1:${smppPort} answers`));

  const session = await bound(smppPort, user);
  const refused = await call(session, 'submit_sm', { source_addr_ton: 5, source_addr: 'Acme', dest_addr_ton: 1, destination_addr: '447700900001', short_message: encodeGsm7('hi') });
  assert.equal(refused.command_status, 0x0a, 'the account has no Sender ID: refused by the acceptance, over the wire');
  // The account's RATE_LIMIT_MAX (3 here) counts its submits and its HTTP requests together.
  for (let i = 0; i < 2; i++) {
    const res = await fetch(`http://127.0.0.1:${port}/v1/account`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(res.status, 200);
  }
  const throttled = await call(session, 'submit_sm', { source_addr_ton: 5, source_addr: 'Acme', dest_addr_ton: 1, destination_addr: '447700900001', short_message: encodeGsm7('hi') });
  assert.equal(throttled.command_status, 0x58);
  assert.equal((await fetch(`http://127.0.0.1:${port}/v1/account`, { headers: { authorization: `Bearer ${key}` } })).status, 429);

  const listed = pigeonJson<{ data: { system_id: string; binds: { type: string; address: string }[] }[] }>(env, 'smpp-user', 'list');
  assert.deepEqual(listed.data.map((u) => [u.system_id, u.binds.map((b) => [b.type, b.address])]), [['reseller', [['transceiver', '127.0.0.1']]]]);

  const unbound = new Promise<void>((resolve) => session.once('unbind', (pdu) => (session.send(pdu.response()), resolve())));
  const exited = server.stop();
  await unbound;
  await closed(session);
  assert.equal(await exited, 0);
  server = null;
});
