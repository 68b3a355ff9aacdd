/**
 * The operator command line through a real child process, against a SQLite file, as an operator
 * runs it; then the server reads what the CLI wrote.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, startPigeon } from '../helpers/processes.ts';
import { LATEST_MIGRATION } from '../../src/store/migrate.ts';
import { pgAdmin, schemaUrl, serviceContext, TEST_DATABASE_URL } from '../helpers/test-store.ts';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'pigeon-cli-'));
// On PostgreSQL (npm run test:pg) the CLI works in a schema of its own, dropped at the end.
const pgSchema = TEST_DATABASE_URL.startsWith('postgres') ? `cli_${process.pid}` : null;
const databaseUrl = pgSchema ? schemaUrl(pgSchema) : `sqlite:${join(dir, 'cli.db')}`;
const env = { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' };

async function pigeon(...args: string[]): Promise<{ code: number; json: any; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run('./bin/pigeon', args, { env });
    return { code: 0, json: args.includes('--json') ? JSON.parse(stdout) : null, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, json: null, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('pigeon command line', () => {
  after(async () => {
    rmSync(dir, { recursive: true, force: true });
    if (pgSchema) await pgAdmin(`drop schema if exists ${pgSchema} cascade`);
  });
  let accountId: string;

  before(async () => {
    if (pgSchema) await pgAdmin(`create schema if not exists ${pgSchema}`);
    // Only serve, worker's server and migrate create a database; every other command needs one.
    const migrated = await pigeon('migrate', '--json');
    assert.equal(migrated.code, 0, migrated.stderr);
    // A new database: migrate says which migrations it applied, in order, up to the latest.
    assert.equal(migrated.json.applied[0], '001-initial');
    assert.equal(migrated.json.applied.at(-1), LATEST_MIGRATION);
    const created = await pigeon('account', 'create', '--name', 'Acme Ltd', '--email', 'ops@acme.test', '--credits', '50', '--json');
    assert.equal(created.code, 0, created.stderr);
    accountId = created.json.id;
  });

  test('help for every command, --version, and the usage of a command on its mistakes', async () => {
    // None of these touches the database: they run side by side.
    const names = ['account create', 'account show', 'account list', 'key create', 'key list', 'key revoke', 'sender-id approve', 'credits add', 'serve', 'doctor', 'dev-webhook'];
    const [help, version, bare, badFlag, extra, ...helps] = await Promise.all([
      pigeon('--help'),
      pigeon('--version'),
      pigeon(),
      pigeon('account', 'list', '--colour', 'red'),
      pigeon('account', 'show', 'a', 'b', '--json'),
      ...names.map((name) => pigeon(...name.split(' '), '--help')),
    ]);
    assert.equal(help.code, 0);
    for (const word of ['serve', 'worker', 'migrate', 'account', 'key', 'sender-id', 'operator', 'credits', 'doctor', 'dev-webhook']) {
      assert.match(help.stdout, new RegExp(`^  ${word}\\b`, 'm'), `pigeon --help lists ${word}`);
    }
    names.forEach((name, i) => {
      const res = helps[i]!;
      assert.equal(res.code, 0, `${name} --help: ${res.stderr}`);
      assert.match(res.stdout, new RegExp(`^Usage: pigeon ${name}`), `${name} --help shows its usage`);
      assert.ok(res.stdout.split('\n').length > 4, `${name} --help explains itself:\n${res.stdout}`);
    });
    const keyHelp = helps[names.indexOf('key create')]!;
    assert.match(keyHelp.stdout, /--scopes <a,b>\s+comma-separated scopes/);
    assert.equal(version.code, 0);
    assert.equal(version.stdout.trim(), JSON.parse(readFileSync('package.json', 'utf8')).version);
    assert.equal(bare.code, 2);
    assert.match(bare.stderr, /Usage: pigeon <command>/);
    assert.equal(badFlag.code, 2);
    assert.equal(badFlag.stderr, "pigeon: Unknown option '--colour'\nUsage: pigeon account list [--email E]\nSee pigeon account list --help.\n");
    assert.equal(extra.code, 2);
    assert.equal(JSON.parse(extra.stderr).code, 'usage');
  });

  test('key create --scopes "" is a usage error, not every scope', async () => {
    const res = await pigeon('key', 'create', accountId, '--label', 'empty', '--scopes', '', '--json');
    assert.equal(res.code, 2, res.stdout);
    assert.match(JSON.parse(res.stderr).message, /--scopes needs at least one scope/);
    const commas = await pigeon('key', 'create', accountId, '--label', 'commas', '--scopes', ' , ', '--json');
    assert.equal(commas.code, 2);
    const list = await pigeon('key', 'list', accountId, '--json');
    assert.ok(!list.json.data.some((k: { label: string }) => k.label === 'empty' || k.label === 'commas'), 'no key was made');
  });

  test('key revoke given the secret key refuses without printing it', async () => {
    const created = await pigeon('key', 'create', accountId, '--label', 'leaked', '--json');
    const secret = created.json.key as string;
    for (const json of [[], ['--json']]) {
      const res = await pigeon('key', 'revoke', secret, ...json);
      assert.equal(res.code, 2);
      assert.ok(!res.stdout.includes(secret) && !res.stderr.includes(secret), `the key is not echoed:\n${res.stderr}`);
      assert.match(res.stderr, /key_/);
    }
  });

  test('one wording when nothing is found', async () => {
    const [keys, accounts, senders] = await Promise.all([
      pigeon('key', 'list', 'acc_nobody'),
      pigeon('account', 'list', '--email', 'nobody@nowhere.test'),
      pigeon('sender-id', 'list', '--account', 'acc_nobody'),
    ]);
    assert.equal(keys.stdout.trim(), 'No API keys found.');
    assert.equal(accounts.stdout.trim(), 'No accounts found.');
    assert.equal(senders.stdout.trim(), 'No Sender IDs found.');
  });

  test('two accounts with one e-mail address are refused, in any case', async () => {
    const res = await pigeon('account', 'create', '--name', 'Acme Again', '--email', 'OPS@Acme.test', '--json');
    assert.equal(res.code, 1);
    const body = JSON.parse(res.stderr);
    assert.equal(body.code, 'email_taken');
    assert.match(body.message, /already exists/);
    const list = await pigeon('account', 'list', '--email', 'ops@acme.test', '--json');
    assert.equal(list.json.data.length, 1);
  });

  test('doctor checks and says what is wrong (--json shape, exit 1 on a failure)', async () => {
    const idle = await freePort();
    const res = await run('./bin/pigeon', ['doctor', '--json'], { env: { ...env, PORT: String(idle) } }).then(
      () => assert.fail('doctor passed with nothing listening at PUBLIC_URL'),
      (e: { code: number; stdout: string }) => e,
    );
    assert.equal(res.code, 1, 'nothing answers at PUBLIC_URL');
    const report = JSON.parse(res.stdout);
    assert.deepEqual(Object.keys(report).sort(), ['checks', 'ok']);
    assert.equal(report.ok, false);
    assert.deepEqual(
      report.checks.map((c: { name: string }) => c.name),
      ['configuration', 'database', 'migrations', 'carrier', 'smtp', 'public_url', 'smpp_server', 'operator_2fa'],
    );
    for (const c of report.checks) assert.deepEqual(Object.keys(c).sort(), c.name === 'operator_2fa' ? ['detail', 'name', 'ok', 'warning'] : ['detail', 'name', 'ok']);
    const byName = Object.fromEntries(report.checks.map((c: { name: string; ok: boolean; detail: string }) => [c.name, c]));
    assert.equal(byName.database.ok, true);
    assert.equal(byName.migrations.ok, true);
    assert.equal(byName.public_url.ok, false);
    assert.match(byName.public_url.detail, /does not answer/);
    // OPERATOR_REQUIRE_2FA off (the default): a warning, which does not fail the doctor.
    assert.deepEqual([byName.operator_2fa.ok, byName.operator_2fa.warning], [true, true]);
    assert.match(byName.operator_2fa.detail, /OPERATOR_REQUIRE_2FA is off/);

    const port = await freePort();
    const server = await startPigeon(['serve', '--no-workers'], { DATABASE_URL: databaseUrl, PORT: String(port) });
    try {
      const healthy = await run('./bin/pigeon', ['doctor', '--json'], { env: { ...env, PORT: String(port) } });
      const body = JSON.parse(healthy.stdout);
      assert.equal(body.ok, true, healthy.stdout);
      const text = await run('./bin/pigeon', ['doctor'], { env: { ...env, PORT: String(port) } });
      assert.match(text.stdout, /^ok {4}public_url: http:\/\/localhost:\d+\/health answers$/m);
      assert.match(text.stdout, /^WARN {2}operator_2fa: OPERATOR_REQUIRE_2FA is off/m, 'exit 0 with the warning shown');
      assert.match(text.stdout, /consider the warnings/);
    } finally {
      await server.stop();
    }
    const smtp = await run('./bin/pigeon', ['doctor', '--json'], { env: { ...env, SMTP_URL: `smtp://user:pw@127.0.0.1:${port}`, OPERATOR_REQUIRE_2FA: 'true' } }).catch((e: { stdout: string }) => e);
    const smtpCheck = JSON.parse(smtp.stdout).checks.find((c: { name: string }) => c.name === 'smtp');
    const required = JSON.parse(smtp.stdout).checks.find((c: { name: string }) => c.name === 'operator_2fa');
    assert.deepEqual(required, { name: 'operator_2fa', ok: true, detail: 'OPERATOR_REQUIRE_2FA=true: every operator signs in to the console with two-factor' });
    assert.equal(smtpCheck.ok, false);
    assert.ok(!smtpCheck.detail.includes(':pw@'), 'the SMTP password is masked');
  });

  test('doctor with CARRIER=smpp tries the bind and says why it failed', async () => {
    const closed = await freePort();
    const smppEnv = { ...env, CARRIER: 'smpp', SMPP_HOST: '127.0.0.1', SMPP_PORT: String(closed), SMPP_SYSTEM_ID: 'pigeon', SMPP_PASSWORD: 'secretpw' };
    const res = await run('./bin/pigeon', ['doctor', '--json'], { env: smppEnv }).then(
      () => assert.fail('doctor passed without an SMSC'),
      (e: { code: number; stdout: string }) => e,
    );
    assert.equal(res.code, 1);
    const carrier = JSON.parse(res.stdout).checks.find((c: { name: string }) => c.name === 'carrier');
    assert.equal(carrier.ok, false);
    assert.match(carrier.detail, /unbound/);
    // The reason of the first failed attempt, without waiting for the next on the retry schedule.
    assert.match(carrier.detail, /ECONNREFUSED/);
    assert.match(carrier.detail, /SMPP_HOST/);
    assert.ok(!res.stdout.includes('secretpw'));
  });

  test('migrate, once applied, says that nothing was pending', async () => {
    const res = await pigeon('migrate', '--json');
    assert.equal(res.code, 0, res.stderr);
    assert.deepEqual(res.json, { applied: [] });
    const text = await pigeon('migrate');
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /Nothing to apply: the database is up to date/);
  });

  test('account create, show, list, suspend, resume; credits add', async () => {
    assert.match(accountId, /^acc_/);
    const show = await pigeon('account', 'show', accountId, '--json');
    assert.deepEqual(Object.keys(show.json).sort(), ['credits_remaining', 'email', 'id', 'name', 'status', 'webhook_secret']);
    assert.equal(show.json.credits_remaining, 50);
    assert.match(show.json.webhook_secret, /^whsec_/);
    const added = await pigeon('credits', 'add', accountId, '25', '--note', 'invoice 7', '--json');
    assert.equal(added.json.credits_remaining, 75);
    const list = await pigeon('account', 'list', '--email', 'OPS@acme.test', '--json');
    assert.equal(list.json.data.length, 1);
    assert.deepEqual(list.json.data[0], { id: accountId, name: 'Acme Ltd', email: 'ops@acme.test', status: 'active', credits_remaining: 75 });
    assert.equal((await pigeon('account', 'suspend', accountId, '--json')).json.status, 'suspended');
    assert.equal((await pigeon('account', 'resume', accountId, '--json')).json.status, 'active');
    const text = await pigeon('account', 'list');
    assert.match(text.stdout, /Acme Ltd/);
  });

  test('key create shows the key once; key revoke', async () => {
    const key = await pigeon('key', 'create', accountId, '--label', 'prod', '--scopes', 'sms:send,reports:read', '--json');
    assert.equal(key.code, 0, key.stderr);
    assert.match(key.json.key, /^pk_live_[0-9A-Za-z]{32}$/);
    assert.equal(key.json.prefix, key.json.key.slice(0, 12));
    assert.deepEqual(key.json.scopes, ['sms:send', 'reports:read']);
    const all = await pigeon('key', 'create', accountId, '--label', 'all', '--json');
    assert.equal(all.json.scopes.length, 10, 'no --scopes means every scope');
    const revoked = await pigeon('key', 'revoke', key.json.id, '--json');
    assert.equal(revoked.json.id, key.json.id);
    assert.ok(revoked.json.revoked_at);
  });

  test('sender-id list, approve, reject, request-info', async () => {
    const { openStore } = await import('../../src/store/connect.ts');
    const { registerSenderId } = await import('../../src/services/sender-ids/sender-ids.ts');
    const store = openStore(env.DATABASE_URL);
    const ctx = serviceContext(store);
    const a = await registerSenderId(ctx, accountId, 'AcmeOne');
    const b = await registerSenderId(ctx, accountId, 'AcmeTwo');
    const c = await registerSenderId(ctx, accountId, 'AcmeThree');
    await store.close();
    const pending = await pigeon('sender-id', 'list', '--status', 'pending', '--json');
    assert.deepEqual(pending.json.data.map((s: { name: string }) => s.name).sort(), ['AcmeOne', 'AcmeThree', 'AcmeTwo']);
    assert.deepEqual(Object.keys(pending.json.data[0]).sort(), ['account_id', 'created_at', 'id', 'name', 'review_note', 'status']);
    assert.equal((await pigeon('sender-id', 'approve', a.id, '--json')).json.status, 'approved');
    const again = await pigeon('sender-id', 'approve', a.id);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /was already approved; nothing changed and no e-mail was sent/);
    const check = openStore(env.DATABASE_URL);
    const mails = await check.db.selectFrom('mail_outbox').select('subject').where('subject', 'like', '%AcmeOne%').execute();
    await check.close();
    assert.equal(mails.length, 1, `one approval mail, not two: ${JSON.stringify(mails)}`);
    const rejected = await pigeon('sender-id', 'reject', b.id, '--reason', 'Not your brand', '--json');
    assert.equal(rejected.json.status, 'rejected');
    assert.equal(rejected.json.review_note, 'Not your brand');
    const info = await pigeon('sender-id', 'request-info', c.id, '--note', 'Send the trademark certificate', '--json');
    assert.equal(info.json.status, 'pending');
    const approved = await pigeon('sender-id', 'list', '--status', 'approved', '--account', accountId, '--json');
    assert.deepEqual(approved.json.data.map((s: { name: string }) => s.name), ['AcmeOne']);
  });

  test('a running server applies what the CLI changes to its very next request', async () => {
    const port = await freePort();
    const server = await startPigeon(['serve', '--no-workers'], { DATABASE_URL: databaseUrl, PORT: String(port) });
    try {
      const made = await pigeon('key', 'create', accountId, '--label', 'live', '--json');
      assert.equal(made.code, 0, made.stderr);
      const created = made.json as { id: string; key: string };
      const key = created.key;
      const call = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
        const res = await fetch(`http://127.0.0.1:${port}${path}`, {
          method,
          headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
          ...(body ? { body: JSON.stringify(body) } : {}),
        });
        return { status: res.status, body: (await res.json()) as { code?: string; data?: { id: string } } };
      };
      const send = () => call('POST', '/v1/sms/send', { to: '+447911123456', from: 'LiveSender', message: 'hi' });
      const sender = await call('POST', '/v1/sms/sender-ids', { name: 'LiveSender' });
      assert.equal(sender.status, 201);
      assert.equal((await send()).body.code, 'invalid_sender_id', 'pending');
      const approval = await pigeon('sender-id', 'approve', sender.body.data!.id, '--json');
      assert.equal(approval.json?.status, 'approved', approval.stderr);
      const sent = await send();
      assert.equal(sent.status, 200, `approved by the CLI, usable at once: ${JSON.stringify(sent.body)}`);
      await pigeon('account', 'limits', accountId, '--countries', '33', '--json');
      assert.equal((await send()).body.code, 'destination_not_allowed', 'destinations narrowed by the CLI, refused at once');
      await pigeon('account', 'limits', accountId, '--all-countries', '--daily', '0', '--json');
      assert.equal((await send()).body.code, 'daily_limit_reached', 'capped by the CLI, refused at once');
      await pigeon('account', 'limits', accountId, '--no-daily', '--json');
      assert.equal((await send()).status, 200, 'lifted by the CLI, sent at once');
      await pigeon('sender-id', 'reject', sender.body.data!.id, '--reason', 'Withdrawn', '--json');
      assert.equal((await send()).body.code, 'invalid_sender_id', 'rejected by the CLI, refused at once');
      await pigeon('account', 'suspend', accountId, '--json');
      assert.equal((await call('GET', '/v1/account')).body.code, 'account_suspended');
      await pigeon('account', 'resume', accountId, '--json');
      assert.equal((await call('GET', '/v1/account')).status, 200);
      await pigeon('key', 'revoke', created.id, '--json');
      assert.equal((await call('GET', '/v1/account')).body.code, 'api_key_revoked');
    } finally {
      await server.stop();
    }
  });

  test('account limits: shown without flags, changed with them', async () => {
    const shown = await pigeon('account', 'limits', accountId, '--json');
    assert.equal(shown.code, 0, shown.stderr);
    assert.deepEqual(shown.json, {
      id: accountId,
      limits: { pending_sender_ids: 20, document_bytes: 50 * 1024 * 1024, daily_messages: null, countries: null },
    });
    const changed = await pigeon('account', 'limits', accountId, '--pending-sender-ids', '5', '--document-bytes', '1048576', '--daily', '300', '--countries', '44,33', '--json');
    assert.equal(changed.code, 0, changed.stderr);
    assert.deepEqual(changed.json.limits, { pending_sender_ids: 5, document_bytes: 1048576, daily_messages: 300, countries: ['33', '44'] });
    assert.deepEqual((await pigeon('account', 'limits', accountId, '--json')).json.limits, changed.json.limits);
    const lifted = await pigeon('account', 'limits', accountId, '--no-daily', '--all-countries', '--json');
    assert.deepEqual(lifted.json.limits, { pending_sender_ids: 5, document_bytes: 1048576, daily_messages: null, countries: null });
    const text = await pigeon('account', 'limits', accountId);
    assert.match(text.stdout, /pending Sender IDs: \d+ of 5/);
    assert.match(text.stdout, /messages per UTC day: no cap/);

    // Refused changes change nothing, so they can run side by side.
    const [both, notNumber, badCountry, noAccount] = await Promise.all([
      pigeon('account', 'limits', accountId, '--daily', '5', '--no-daily', '--json'),
      pigeon('account', 'limits', accountId, '--daily', 'lots', '--json'),
      pigeon('account', 'limits', accountId, '--countries', '44,XX', '--json'),
      pigeon('account', 'limits', 'acc_missing', '--json'),
    ]);
    assert.equal(both.code, 2);
    assert.equal(notNumber.code, 2);
    assert.equal(badCountry.code, 1);
    assert.equal(JSON.parse(badCountry.stderr).code, 'invalid_request');
    assert.equal(noAccount.code, 1);
    assert.equal(JSON.parse(noAccount.stderr).code, 'not_found');
  });

  test('operator create', async () => {
    const res = await pigeon('operator', 'create', '--email', 'root@pigeon.test', '--password', 'correct horse battery', '--json');
    assert.equal(res.code, 0, res.stderr);
    assert.equal(res.json.email, 'root@pigeon.test');
    const short = await pigeon('operator', 'create', '--email', 'x@pigeon.test', '--password', 'short', '--json');
    assert.equal(short.code, 1);
    assert.equal(JSON.parse(short.stderr).code, 'invalid_request');
  });

  test('operator roles, and the audit log of what the command line changed', async () => {
    assert.equal(JSON.parse((await pigeon('operator', 'create', '--email', 'admin-old@pigeon.test', '--password', 'correct horse battery', '--json')).stdout).role, 'admin');
    const support = await pigeon('operator', 'create', 'desk@pigeon.test', '--role', 'support', '--password', 'correct horse battery', '--json');
    assert.equal(support.code, 0, support.stderr);
    assert.equal(support.json.role, 'support');
    const badRole = await pigeon('operator', 'create', 'x2@pigeon.test', '--role', 'root', '--password', 'correct horse battery', '--json');
    assert.equal(badRole.code, 1);
    assert.equal(JSON.parse(badRole.stderr).code, 'invalid_request');
    assert.equal((await pigeon('operator', 'role', 'desk@pigeon.test', '--role', 'finance', '--json')).json.role, 'finance');
    assert.equal((await pigeon('credits', 'add', accountId, '7', '--json')).code, 0);
    assert.equal((await pigeon('operator', 'reset-2fa', 'desk@pigeon.test', '--json')).code, 0);

    const listed = await pigeon('audit', 'list', '--account', accountId, '--action', 'credits.added', '--json');
    assert.equal(listed.code, 0, listed.stderr);
    const credits = listed.json.data[0];
    assert.equal(credits.action, 'credits.added');
    assert.equal(credits.actor.type, 'cli');
    assert.equal(credits.ip, null);
    assert.deepEqual(credits.changes.amount, [null, 7]);
    const roles = await pigeon('audit', 'list', '--action', 'operator', '--json');
    assert.deepEqual(
      roles.json.data.filter((e: { target: { id: string } }) => e.target.id === support.json.id).map((e: { action: string }) => e.action),
      ['operator.two_factor_reset', 'operator.role_changed', 'operator.created'],
    );
    const reset = roles.json.data.find((e: { action: string }) => e.action === 'operator.two_factor_reset');
    assert.equal(reset.actor.type, 'cli', 'pigeon operator reset-2fa is recorded as the command line');
    const bad = await pigeon('audit', 'list', '--since', 'last tuesday', '--json');
    assert.equal(bad.code, 1);
    assert.equal(JSON.parse(bad.stderr).code, 'invalid_request');
  });

  test('mistakes: unknown command, missing flag, unknown id, bad amount', async () => {
    const [unknown, missing, noAccount, bad, badFlag] = await Promise.all([
      pigeon('frobnicate', '--json'),
      pigeon('account', 'create', '--name', 'X', '--json'),
      pigeon('account', 'show', 'acc_missing', '--json'),
      pigeon('credits', 'add', accountId, '-5', '--json'),
      pigeon('account', 'list', '--colour', 'red', '--json'),
    ]);
    assert.equal(unknown.code, 2);
    assert.equal(missing.code, 2);
    assert.match(JSON.parse(missing.stderr).message, /--email/);
    assert.equal(noAccount.code, 1);
    assert.equal(JSON.parse(noAccount.stderr).code, 'not_found');
    assert.equal(bad.code, 2);
    assert.equal(badFlag.code, 2);
  });
});
