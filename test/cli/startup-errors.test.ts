/**
 * A start that cannot succeed says which setting is at fault, with its value (secrets masked) and
 * what to do, on stderr, without a stack trace, and exits non-zero: run as an operator runs it.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { loadConfig } from '../../src/config/config.ts';
import { startupProblems } from '../../src/config/startup-checks.ts';

const root = process.cwd();
const dir = mkdtempSync(join(tmpdir(), 'pigeon-startup-'));

function pigeon(args: string[], env: Record<string, string>, cwd = root): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(join(root, 'bin/pigeon'), args, {
      cwd,
      env: { ...process.env, DATABASE_URL: `sqlite:${join(dir, 'pigeon.db')}`, PORT: '0', LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

function assertExplained(res: { code: number | null; stderr: string }, variable: string, code: number): void {
  assert.equal(res.code, code, res.stderr);
  assert.match(res.stderr, new RegExp(`^  ${variable}`, 'm'), `names ${variable}:\n${res.stderr}`);
  assert.doesNotMatch(res.stderr, /^\s+at /m, `no stack trace:\n${res.stderr}`);
  assert.match(res.stderr, /^pigeon: cannot start/);
}

describe('start-up errors name the setting at fault', () => {
  test('each invalid variable is reported, all of them at once, with what to do', async () => {
    const res = await pigeon(['serve'], { PORT: 'abc', LOG_LEVEL: 'verbose', HOST: 'bad host', CARRIER: 'kannel' });
    assertExplained(res, 'PORT', 2);
    for (const variable of ['LOG_LEVEL="verbose"', 'HOST="bad host"', 'CARRIER="kannel"']) assert.ok(res.stderr.includes(`  ${variable}`), res.stderr);
    assert.match(res.stderr, /must be one of fatal, error, warn, info, debug, trace, silent/);
    assert.match(res.stderr, /unset it for the default \(3000\)/);
  });

  test('secrets in the value are masked', async () => {
    const res = await pigeon(['serve'], { SMTP_URL: 'http://mailer:hunter2@127.0.0.1:25', DATABASE_URL: 'mysql://app:s3cret@127.0.0.1/db', METRICS_TOKEN: 'tok' });
    assertExplained(res, 'SMTP_URL', 2);
    assert.ok(res.stderr.includes('SMTP_URL="http://mailer:***@127.0.0.1:25"'), res.stderr);
    assert.ok(res.stderr.includes('DATABASE_URL="mysql://app:***@127.0.0.1/db"'), res.stderr);
    assert.doesNotMatch(res.stderr, /hunter2|s3cret/);
  });

  test('PostgreSQL refusing connections: DATABASE_URL named, its password masked', async () => {
    const res = await pigeon(['serve'], { DATABASE_URL: 'postgres://pigeon:hunter2@127.0.0.1:1/pigeon' });
    assertExplained(res, 'DATABASE_URL', 1);
    assert.match(res.stderr, /PostgreSQL at 127\.0\.0\.1:1 cannot be reached \(ECONNREFUSED\)/);
    assert.doesNotMatch(res.stderr, /hunter2/);
  });

  test('PostgreSQL refusing connections: `migrate` and every other command say the same', async () => {
    const answers = await Promise.all([['migrate'], ['account', 'list']].map((args) => pigeon(args, { DATABASE_URL: 'postgres://pigeon:hunter2@127.0.0.1:1/pigeon' })));
    for (const res of answers) {
      assertExplained(res, 'DATABASE_URL', 1);
      assert.match(res.stderr, /PostgreSQL at 127\.0\.0\.1:1 cannot be reached \(ECONNREFUSED\)/);
      assert.doesNotMatch(res.stderr, /hunter2|LOG_LEVEL=debug/);
    }
  });

  test('an unwritable SQLite location fails at once instead of hanging', async () => {
    for (const url of ['sqlite:/proc/pigeon/pigeon.db', 'sqlite:/proc/pigeon.db']) {
      const res = await pigeon(['serve'], { DATABASE_URL: url });
      assertExplained(res, 'DATABASE_URL', 2);
      assert.match(res.stderr, /cannot be created or written to/);
    }
  });

  test('the port in use names PORT', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const { port } = blocker.address() as { port: number };
    try {
      const res = await pigeon(['serve'], { PORT: String(port), HOST: '127.0.0.1' });
      assertExplained(res, 'PORT', 1);
      assert.match(res.stderr, new RegExp(`127\\.0\\.0\\.1:${port} is already in use`));
    } finally {
      blocker.close();
    }
  });

  test('the SMPP port in use names SMPP_SERVER_PORT, not PORT, and says what to do', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const { port } = blocker.address() as { port: number };
    try {
      const res = await pigeon(['serve'], { PORT: '0', HOST: '127.0.0.1', SMPP_SERVER_PORT: String(port) });
      assertExplained(res, `SMPP_SERVER_PORT="${port}"`, 1);
      assert.match(res.stderr, new RegExp(`127\\.0\\.0\\.1:${port}: it is already in use`));
      assert.match(res.stderr, /SMPP_SERVER_PORT=0 to turn the SMPP listener off/);
      assert.match(res.stderr, /SMPP_SERVER_PORT to a free port/);
      assert.doesNotMatch(res.stderr, /(^|[^_])PORT=/m, `PORT is not blamed:\n${res.stderr}`);
      assert.doesNotMatch(res.stderr, /EADDRINUSE|"level"/, `no log line of the listen error:\n${res.stderr}`);
      assert.equal(res.stdout, '', res.stdout);
    } finally {
      blocker.close();
    }
  });

  test('the SMPP TLS port in use names SMPP_SERVER_TLS_PORT', async () => {
    const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-days', '1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { encoding: 'utf8' });
    assert.equal(made.status, 0, made.stderr);
    // The plain listener (which 0 would turn off, and TLS with it) gets a port free a moment ago.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const free = (probe.address() as { port: number }).port;
    await new Promise((resolve) => probe.close(resolve));
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const { port } = blocker.address() as { port: number };
    try {
      const res = await pigeon(['serve'], {
        PORT: '0',
        HOST: '127.0.0.1',
        SMPP_SERVER_PORT: String(free),
        SMPP_SERVER_TLS_PORT: String(port),
        SMPP_SERVER_TLS_CERT: join(dir, 'cert.pem'),
        SMPP_SERVER_TLS_KEY: join(dir, 'key.pem'),
      });
      assertExplained(res, `SMPP_SERVER_TLS_PORT="${port}"`, 1);
      assert.match(res.stderr, /already in use/);
      assert.doesNotMatch(res.stderr, /^  (PORT|SMPP_SERVER_PORT)=/m, res.stderr);
    } finally {
      blocker.close();
    }
  });

  test('the command line and a worker never create a database where there is none', async () => {
    const elsewhere = mkdtempSync(join(tmpdir(), 'pigeon-elsewhere-'));
    for (const args of [['account', 'list'], ['worker']]) {
      const res = await pigeon(args, { DATABASE_URL: 'sqlite:./data/pigeon.db' }, elsewhere);
      assertExplained(res, 'DATABASE_URL', 2);
      assert.match(res.stderr, /there is no Pigeon database at .*data\/pigeon\.db/);
      assert.ok(!existsSync(join(elsewhere, 'data', 'pigeon.db')), `${args.join(' ')} created an empty database`);
    }
    const typo = await pigeon(['account', 'list'], { DATABASE_URL: `sqlite:${join(dir, 'pigoen.db')}` });
    assertExplained(typo, 'DATABASE_URL', 2);
    assert.ok(!existsSync(join(dir, 'pigoen.db')));
  });

  test('a command other than serve and migrate never migrates: it refuses a database that lacks migrations', async () => {
    // A SQLite file that exists but has no migrations applied (an empty database).
    const path = join(dir, 'unmigrated.db');
    new Database(path).close();
    const res = await pigeon(['account', 'list'], { DATABASE_URL: `sqlite:${path}` });
    assertExplained(res, 'DATABASE_URL', 1);
    assert.match(res.stderr, /lacks migrations/);
    assert.match(res.stderr, /pigeon migrate/);
    const db = new Database(path, { readonly: true });
    const tables = db.prepare("select name from sqlite_master where type = 'table'").all();
    db.close();
    assert.deepEqual(tables, [], 'nothing was migrated');
    // pigeon migrate applies them; then the command runs.
    assert.equal((await pigeon(['migrate'], { DATABASE_URL: `sqlite:${path}` })).code, 0);
    const listed = await pigeon(['account', 'list', '--json'], { DATABASE_URL: `sqlite:${path}` });
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(JSON.parse(listed.stdout), { data: [] });
  });

  test('--json gives one JSON object with every problem', async () => {
    const res = await pigeon(['account', 'list', '--json'], { PORT: '70000' });
    assert.equal(res.code, 2);
    const body = JSON.parse(res.stderr) as { code: string; problems: { variable: string; value: string; hint: string }[] };
    assert.equal(body.code, 'config');
    assert.deepEqual(body.problems.map((p) => [p.variable, p.value]), [['PORT', '70000']]);
  });

  test('listen errors that a HOST explains name HOST', () => {
    const config = { port: 3000, host: '127.0.0.1', databaseUrl: 'sqlite:./data/pigeon.db' };
    const notHere = Object.assign(new Error('listen EADDRNOTAVAIL'), { code: 'EADDRNOTAVAIL', syscall: 'listen' });
    assert.equal(startupProblems(notHere, config)?.[0]?.variable, 'HOST');
    const unknownName = Object.assign(new Error('getaddrinfo ENOTFOUND pigeon-host'), { code: 'ENOTFOUND', syscall: 'getaddrinfo', hostname: 'pigeon-host' });
    assert.equal(startupProblems(unknownName, { ...config, host: 'pigeon-host' })?.[0]?.variable, 'HOST');
    assert.equal(startupProblems(new Error('a bug'), config), null, 'anything else is not blamed on a setting');
  });

  test('PUBLIC_URL follows PORT unless set', () => {
    assert.equal(loadConfig({ PORT: '4100' }).publicUrl, 'http://localhost:4100');
    assert.equal(loadConfig({}).publicUrl, 'http://localhost:3000');
    assert.equal(loadConfig({ PORT: '4100', PUBLIC_URL: 'https://sms.example.com/' }).publicUrl, 'https://sms.example.com');
  });

  test('SIGTERM to `npm start` stops the node process', async () => {
    const child = spawn('npm', ['start'], {
      env: { ...process.env, DATABASE_URL: `sqlite:${join(dir, 'npm-start.db')}`, PORT: '0', LOG_LEVEL: 'info', LOG_FORMAT: 'json' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    const started = new Promise<number>((resolve, reject) => {
      const onData = (c: Buffer) => {
        out += c.toString();
        const line = out.split('\n').find((l) => l.includes('"msg":"pigeon started"'));
        if (line) resolve((JSON.parse(line) as { pid: number }).pid);
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      void exited.then(() => reject(new Error(`npm start exited early:\n${out}`)));
    });
    const pid = await started;
    child.kill('SIGTERM');
    await exited;
    // The node process itself, not only npm, must be gone.
    const deadline = Date.now() + 20_000;
    let alive = true;
    while (alive && Date.now() < deadline) {
      try {
        process.kill(pid, 0);
        await new Promise((resolve) => setTimeout(resolve, 100));
      } catch {
        alive = false;
      }
    }
    if (alive) process.kill(pid, 'SIGKILL');
    assert.equal(alive, false, `node process ${pid} still running after SIGTERM to npm start:\n${out}`);
  });
});
