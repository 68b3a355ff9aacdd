/** `pigeon smpp-user create|list|rotate|delete` through real child processes (DECISIONS.md §10). */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pigeonCli } from '../helpers/processes.ts';
import { processDatabase } from '../helpers/test-store.ts';
import { openStore } from '../../src/store/connect.ts';
import { smppUserRow } from '../../src/store/repositories/smpp-users.repository.ts';
import { verifyPassword } from '../../src/services/auth/passwords.ts';

const dir = mkdtempSync(join(tmpdir(), 'pigeon-smpp-user-'));
const database = processDatabase('smpp_user_cli', dir);
const env = { ...process.env, DATABASE_URL: database.url, LOG_LEVEL: 'warn' };

const pigeon = (...args: string[]) => pigeonCli(env, ...args);

async function storedHash(systemId: string): Promise<string | undefined> {
  const store = openStore(database.url);
  try {
    return (await smppUserRow(store.db, systemId))?.password_hash;
  } finally {
    await store.close();
  }
}

let accountId: string;
before(async () => {
  await database.open();
  const created = await pigeon('account', 'create', '--name', 'Acme Ltd', '--email', 'ops@acme.test', '--credits', '50');
  assert.equal(created.code, 0, created.stderr);
  accountId = created.json.id;
});
after(async () => {
  await database.close();
  rmSync(dir, { recursive: true, force: true });
});

test('create prints the password once in the shape of §10, stored hashed; list, rotate and delete', async () => {
  const made = await pigeon('smpp-user', 'create', accountId, '--system-id', 'acme_01', '--tps', '20', '--max-binds', '2', '--allow', '127.0.0.0/8,::1');
  assert.equal(made.code, 0, made.stderr);
  assert.deepEqual(Object.keys(made.json), ['system_id', 'account_id', 'password', 'tps', 'max_binds', 'allow']);
  assert.deepEqual({ ...made.json, password: undefined }, { system_id: 'acme_01', account_id: accountId, password: undefined, tps: 20, max_binds: 2, allow: ['127.0.0.0/8', '::1'] });
  assert.match(made.json.password, /^[A-Za-z0-9]{8}$/);
  const hash = await storedHash('acme_01');
  assert.ok(hash?.startsWith('scrypt$') && !hash.includes(made.json.password));
  assert.ok(await verifyPassword(made.json.password, hash!));

  const defaults = await pigeon('smpp-user', 'create', accountId, '--system-id', 'acme-2');
  assert.equal(defaults.code, 0, defaults.stderr);
  assert.deepEqual([defaults.json.tps, defaults.json.max_binds, defaults.json.allow], [100, 4, []]);

  const listed = await pigeon('smpp-user', 'list', '--account', accountId);
  assert.equal(listed.code, 0, listed.stderr);
  assert.deepEqual(
    listed.json.data.map((u: any) => [u.system_id, u.tps, u.max_binds, u.allow, u.binds, u.waiting]),
    [
      ['acme_01', 20, 2, ['127.0.0.0/8', '::1'], [], 0],
      ['acme-2', 100, 4, [], [], 0],
    ],
  );
  assert.ok(!JSON.stringify(listed.json).includes(made.json.password), 'list never shows a password');

  const rotated = await pigeon('smpp-user', 'rotate', 'acme_01');
  assert.equal(rotated.code, 0, rotated.stderr);
  assert.notEqual(rotated.json.password, made.json.password);
  const newHash = await storedHash('acme_01');
  assert.ok(await verifyPassword(rotated.json.password, newHash!));
  assert.equal(await verifyPassword(made.json.password, newHash!), false);

  const deleted = await pigeon('smpp-user', 'delete', 'acme-2');
  assert.deepEqual(deleted.json, { system_id: 'acme-2', account_id: accountId, deleted: true });
  assert.deepEqual((await pigeon('smpp-user', 'list')).json.data.map((u: any) => u.system_id), ['acme_01']);
});

test('refusals: a taken or malformed system_id, a bad range, an unknown account or user', async () => {
  const cases: [string[], number, string][] = [
    [['smpp-user', 'create', accountId, '--system-id', 'acme_01'], 1, 'system_id_taken'],
    [['smpp-user', 'create', accountId, '--system-id', 'far-too-long-system-id'], 1, 'invalid_request'],
    [['smpp-user', 'create', accountId, '--system-id', 'ok1', '--allow', '127.0.0.0/40'], 1, 'invalid_request'],
    [['smpp-user', 'create', 'acc_nobody', '--system-id', 'ok2'], 1, 'not_found'],
    [['smpp-user', 'rotate', 'nobody'], 1, 'not_found'],
    [['smpp-user', 'create', accountId], 2, '--system-id is required'],
  ];
  for (const [args, code, text] of cases) {
    const result = await pigeon(...args);
    assert.equal(result.code, code, `${args.join(' ')}: ${result.stderr}`);
    assert.ok(result.stderr.includes(text), `${args.join(' ')}: ${result.stderr}`);
  }
});
