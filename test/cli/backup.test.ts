/**
 * Backups of a SQLite store (DECISIONS.md §13, docs/deployment.md "Backups"): `pigeon backup`
 * taken while a real `pigeon serve` takes sends from several clients, restored into a fresh file
 * with `pigeon restore`, holds every message answered 200 before the backup started and balances
 * equal to their ledgers; restore refuses what it must; scheduled backups keep BACKUP_KEEP.
 *
 * Always on SQLite, in the SQLite run only: PostgreSQL is backed up with pg_dump, which both
 * commands point to.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, statSync, writeFileSync, writeSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import pino from 'pino';
import SqliteDatabase from '../../src/store/sqlite-driver.mjs';
import { ConfigError, loadConfig } from '../../src/config/config.ts';
import { BackupError, backupDatabase, restoreDatabase, runScheduledBackup } from '../../src/services/backups/backups.ts';
import { openStore, type Store } from '../../src/store/connect.ts';
import { LATEST_MIGRATION, migrateTo, migrateToLatest } from '../../src/store/migrate.ts';
import { backupFileName } from '../../src/domain/backup-schedule.ts';
import { createCustomer } from '../helpers/customers.ts';
import { TestClock } from '../helpers/harness.ts';
import { freePort, ROOT, startPigeon, type PigeonProcess } from '../helpers/processes.ts';
import { onlyInRunOf, serviceContext } from '../helpers/test-store.ts';
import { waitFor } from '../helpers/wait-for.ts';

const execFileAsync = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'pigeon-backup-'));
const HOUR = 3_600_000;

async function pigeon(env: Record<string, string>, ...args: string[]): Promise<{ code: number; json: any; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileAsync('./bin/pigeon', [...args, '--json'], { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'warn', ...env } });
    return { code: 0, json: JSON.parse(stdout), stderr };
  } catch (err) {
    const e = err as { code: number; stderr: string };
    return { code: e.code, json: e.stderr.trim() ? JSON.parse(e.stderr.trim().split('\n').at(-1)!) : null, stderr: e.stderr };
  }
}

async function openMigrated(path: string): Promise<Store> {
  const store = openStore(`sqlite:${path}`);
  await migrateToLatest(store.db);
  return store;
}

async function balancesAndLedgers(store: Store): Promise<{ id: string; credits: number; ledger: number; debits: number; segments: number }[]> {
  const accounts = await store.db.selectFrom('accounts').select(['id', 'credits']).execute();
  return Promise.all(
    accounts.map(async (a) => {
      const ledger = await store.db
        .selectFrom('credit_ledger')
        .select([sql<number>`coalesce(sum(amount), 0)`.as('sum'), sql<number>`coalesce(sum(case when kind = 'debit' then amount else 0 end), 0)`.as('debits')])
        .where('account_id', '=', a.id)
        .executeTakeFirstOrThrow();
      const segments = await store.db.selectFrom('messages').select(sql<number>`coalesce(sum(segments), 0)`.as('n')).where('account_id', '=', a.id).executeTakeFirstOrThrow();
      return { id: a.id, credits: Number(a.credits), ledger: Number(ledger.sum), debits: -Number(ledger.debits), segments: Number(segments.n) };
    }),
  );
}

after(() => rmSync(dir, { recursive: true, force: true }));

describe('pigeon backup of a serving SQLite store, and pigeon restore', { skip: onlyInRunOf('sqlite') }, () => {
  const live = join(dir, 'live.db');
  const liveEnv = { DATABASE_URL: `sqlite:${live}` };
  const scheduledDir = join(dir, 'scheduled');
  let server: PigeonProcess | null = null;
  let port: number;
  const customers: { accountId: string; key: string }[] = [];

  before(async () => {
    const store = await openMigrated(live);
    const ctx = serviceContext(store, liveEnv);
    for (const n of [1, 2]) customers.push(await createCustomer(ctx, { name: `Backup ${n}`, email: `backup${n}@example.com`, credits: 1_000_000 }));
    await store.close();
    port = await freePort();
    server = await startPigeon(['serve'], {
      ...liveEnv,
      PORT: String(port),
      SIM_DELIVERY_DELAY_MS: '20',
      RATE_LIMIT_MAX: '1000000',
      BACKUP_DIR: scheduledDir,
      BACKUP_INTERVAL_HOURS: '24',
      BACKUP_KEEP: '3',
    });
  });

  after(async () => {
    await server?.kill();
  });

  test('a backup taken under load restores with every message accepted before it and balances equal to their ledgers', { timeout: 60_000 }, async () => {
    interface Answer {
      accountId: string;
      ids: string[];
      answeredAt: number;
    }
    const answers: Answer[] = [];
    let refused = 0;
    let running = true;
    let n = 0;
    // Two clients per account, singles and bulks of five, as fast as the server answers.
    const client = async (c: { accountId: string; key: string }) => {
      while (running) {
        const i = n++;
        const bulk = i % 3 === 0;
        const body = bulk
          ? { from: 'Acme', messages: Array.from({ length: 5 }, (_, k) => ({ to: `+1415555${String((i * 5 + k) % 10000).padStart(4, '0')}`, message: `backup ${i}.${k}` })) }
          : { to: `+1415555${String(i % 10000).padStart(4, '0')}`, from: 'Acme', message: `backup ${i}` };
        const res = await fetch(`http://127.0.0.1:${port}/v1/sms/${bulk ? 'bulk' : 'send'}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${c.key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        const json = (await res.json()) as any;
        if (res.status !== 200) {
          refused++;
          continue;
        }
        answers.push({ accountId: c.accountId, ids: bulk ? json.messages.map((m: { message_id: string }) => m.message_id) : [json.message_id], answeredAt: Date.now() });
      }
    };
    const clients = customers.flatMap((c) => [client(c), client(c)]);
    await waitFor(() => answers.length >= 150, { message: () => `150 answered sends (${answers.length})` });

    const backupFile = join(dir, 'taken-under-load.db');
    const startedAt = Date.now();
    const acceptedBefore = answers.filter((a) => a.answeredAt < startedAt).flatMap((a) => a.ids);
    const backup = await pigeon(liveEnv, 'backup', backupFile);
    const endedAt = Date.now();
    // Sends went on while the backup ran, and go on after it.
    const during = answers.filter((a) => a.answeredAt > startedAt && a.answeredAt < endedAt).length;
    const countAfter = answers.length;
    await waitFor(() => answers.length >= countAfter + 20, { message: 'sends after the backup' });
    running = false;
    await Promise.all(clients);

    assert.equal(backup.code, 0, backup.stderr);
    assert.equal(backup.json.file, backupFile);
    assert.equal(backup.json.migration, LATEST_MIGRATION);
    assert.equal(backup.json.bytes, statSync(backupFile).size);
    assert.ok(during > 0, 'no send was answered while the backup ran');
    assert.equal(refused, 0, 'sends were refused during the load');
    // One file on its own: nothing was left beside it.
    assert.deepEqual(readdirSync(dir).filter((f) => f.startsWith('taken-under-load')), ['taken-under-load.db']);

    const restoredPath = join(dir, 'restored', 'pigeon.db');
    const restored = await pigeon({ DATABASE_URL: `sqlite:${restoredPath}` }, 'restore', backupFile);
    assert.equal(restored.code, 0, restored.stderr);
    assert.deepEqual(restored.json.applied, []);
    assert.equal(restored.json.previous, null);

    const store = openStore(`sqlite:${restoredPath}`);
    try {
      const ids = new Set((await store.db.selectFrom('messages').select('id').execute()).map((m) => m.id));
      const missing = acceptedBefore.filter((id) => !ids.has(id));
      assert.deepEqual(missing, [], `${missing.length} of ${acceptedBefore.length} messages accepted before the backup are not in it`);
      // The copy is one moment of the database: every message has its debit, every balance its ledger.
      for (const a of await balancesAndLedgers(store)) {
        assert.equal(a.credits, a.ledger, `${a.id}: balance vs ledger`);
        assert.equal(a.debits, a.segments, `${a.id}: debits vs stored messages`);
      }
      assert.ok(ids.size < answers.reduce((s, a) => s + a.ids.length, 0), 'the backup holds every message, even those sent after it: it was not taken under load');
    } finally {
      await store.close();
    }

    // The restored store serves: the keys in it send.
    const restoredPort = await freePort();
    const again = await startPigeon(['serve'], { DATABASE_URL: `sqlite:${restoredPath}`, PORT: String(restoredPort), SIM_DELIVERY_DELAY_MS: '20' });
    try {
      const res = await fetch(`http://127.0.0.1:${restoredPort}/v1/sms/send`, {
        method: 'POST',
        headers: { authorization: `Bearer ${customers[0]!.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ to: '+14155550123', from: 'Acme', message: 'after the restore' }),
      });
      assert.equal(res.status, 200, await res.text());
    } finally {
      assert.equal(await again.stop(), 0);
    }
  });

  test('the worker of pigeon serve takes the scheduled backup at start', async () => {
    const name = await waitFor(() => readdirSync(scheduledDir, { withFileTypes: true }).find((f) => /^pigeon-\d{8}T\d{6}Z\.db$/.test(f.name))?.name, {
      message: () => `a scheduled backup in ${scheduledDir}:\n${server!.output().slice(-2000)}`,
    });
    const db = new SqliteDatabase(join(scheduledDir, name), { readonly: true });
    try {
      assert.equal(db.pragma('quick_check', { simple: true }), 'ok');
      assert.equal((db.prepare('select count(*) as n from accounts').get() as { n: number }).n, 2);
    } finally {
      db.close();
    }
    assert.match(server!.output(), /"msg":"backup taken"/);
  });

  test('restore refuses while a server has the database open, and leaves it untouched', async () => {
    const backupFile = join(dir, 'for-refusal.db');
    const liveConfig = loadConfig(liveEnv);
    await backupDatabase(liveConfig, backupFile);
    const before = statSync(live).ino;
    const refused = await pigeon(liveEnv, 'restore', backupFile);
    assert.equal(refused.code, 1);
    assert.equal(refused.json.code, 'in_use');
    assert.match(refused.json.message, /stop every `pigeon serve` and `pigeon worker`/);
    assert.equal(statSync(live).ino, before, 'the live database was replaced');
    assert.deepEqual(readdirSync(dir).filter((f) => f.includes('restoring') || f.includes('before-restore')), []);
    // A second backup to the same name is refused; --replace overwrites it.
    await assert.rejects(backupDatabase(liveConfig, backupFile), (err: BackupError) => err.code === 'exists');
    await assert.rejects(backupDatabase(liveConfig, live), (err: BackupError) => err.code === 'same_file');
    assert.equal((await backupDatabase(liveConfig, backupFile, { replace: true })).file, backupFile);
  });
});

describe('pigeon restore checks what it is given', { skip: onlyInRunOf('sqlite') }, () => {
  const target = join(dir, 'checks', 'pigeon.db');
  const config = loadConfig({ DATABASE_URL: `sqlite:${target}` });
  mkdirSync(join(dir, 'checks'), { recursive: true });
  const restore = (file: string) => restoreDatabase(config, file, Date.now());

  test('a file that is not SQLite, a SQLite file that is not Pigeon, a damaged one, a missing one, one of a newer version', async () => {
    const text = join(dir, 'checks', 'notes.txt');
    writeFileSync(text, 'hello\n');
    const foreign = join(dir, 'checks', 'foreign.db');
    const db = new SqliteDatabase(foreign);
    db.exec('create table t (x)');
    db.close();
    // A Pigeon database with pages overwritten in the middle.
    const damaged = join(dir, 'checks', 'damaged.db');
    const good = await openMigrated(damaged);
    await good.close();
    const fd = openSync(damaged, 'r+');
    const size = statSync(damaged).size;
    for (let at = 8192; at < size - 4096; at += 16384) writeSync(fd, Buffer.alloc(2048, 0xa5), 0, 2048, at);
    closeSync(fd);
    const newer = join(dir, 'checks', 'newer.db');
    const future = await openMigrated(newer);
    await sql`insert into pigeon_migrations (name, timestamp) values ('999-from-the-future', '2030-01-01T00:00:00.000Z')`.execute(future.db);
    await future.close();

    const cases: [string, string][] = [
      [text, 'not_sqlite'],
      [foreign, 'not_pigeon'],
      [damaged, 'damaged'],
      [join(dir, 'checks', 'nowhere.db'), 'missing'],
      [newer, 'newer_version'],
      [target, 'same_file'],
    ];
    for (const [file, code] of cases) {
      await assert.rejects(restore(file), (err: BackupError) => err.code === code || assert.fail(`${file}: ${err.code} ${err.message}`));
      assert.equal(existsSync(target), false, `${file} was restored`);
      assert.deepEqual(readdirSync(join(dir, 'checks')).filter((f) => f.includes('restoring')), [], `${file} left a copy behind`);
    }
  });

  test('a backup of an older version is migrated; the database it replaces is kept beside it', async () => {
    const old = join(dir, 'checks', 'old.db');
    const store = openStore(`sqlite:${old}`);
    await migrateTo(store.db, '014-scheduling');
    await store.close();
    const first = await restore(old);
    assert.equal(first.applied.at(-1), LATEST_MIGRATION);
    assert.ok(first.applied.includes('015-one-statement-acceptance'));
    assert.equal(first.previous, null);
    // Again over it: the one in place is kept, not lost.
    copyFileSync(old, join(dir, 'checks', 'old-2.db'));
    const second = await restore(join(dir, 'checks', 'old-2.db'));
    assert.match(second.previous ?? '', /pigeon\.db\.before-restore-\d{8}T\d{6}Z$/);
    const kept = new SqliteDatabase(second.previous!, { readonly: true });
    assert.equal((kept.prepare('select max(name) as m from pigeon_migrations').get() as { m: string }).m, LATEST_MIGRATION);
    kept.close();
  });

  test('with PostgreSQL both commands say to use pg_dump and pg_restore, and how (exit 2)', async () => {
    const pgEnv = { DATABASE_URL: 'postgres://pigeon@127.0.0.1:5432/pigeon' };
    const [backup, restored] = await Promise.all([pigeon(pgEnv, 'backup', join(dir, 'x.dump')), pigeon(pgEnv, 'restore', join(dir, 'x.dump'))]);
    assert.equal(backup.code, 2);
    assert.equal(backup.json.code, 'use_pg_tools');
    assert.match(backup.json.message, /pg_dump --format=custom --file=pigeon\.dump "\$DATABASE_URL"/);
    assert.equal(restored.code, 2);
    assert.match(restored.json.message, /pg_restore --no-owner --dbname="\$DATABASE_URL" pigeon\.dump/);
    assert.match(restored.json.message, /pigeon migrate/);
  });
});

describe('scheduled backups', { skip: onlyInRunOf('sqlite') }, () => {
  const path = join(dir, 'scheduled-source.db');
  const backups = join(dir, 'kept');
  let store: Store;
  before(async () => {
    store = await openMigrated(path);
  });
  after(async () => {
    await store.close();
  });

  const ctx = (clock: TestClock, env: Record<string, string> = {}) => ({
    config: loadConfig({ DATABASE_URL: `sqlite:${path}`, BACKUP_DIR: backups, BACKUP_INTERVAL_HOURS: '24', BACKUP_KEEP: '3', ...env }),
    clock: clock.now,
    log: pino({ level: 'silent' }),
  });

  test('one per interval, the newest BACKUP_KEEP kept, other files left alone', async () => {
    const clock = new TestClock(Date.parse('2026-11-01T03:00:00Z'));
    mkdirSync(backups, { recursive: true });
    writeFileSync(join(backups, 'operator-notes.txt'), 'mine');
    // What a process that died mid-copy left: removed with the next backup.
    writeFileSync(join(backups, `${backupFileName(clock.ms - HOUR)}.partial-999999`), 'half');
    const first = await runScheduledBackup(ctx(clock));
    assert.equal(first.taken?.file, join(backups, 'pigeon-20261101T030000Z.db'));
    clock.advance(23 * HOUR);
    assert.equal((await runScheduledBackup(ctx(clock))).taken, null, 'taken again within the interval');
    const taken: string[] = ['pigeon-20261101T030000Z.db'];
    for (let day = 0; day < 5; day++) {
      clock.advance(day === 0 ? HOUR : 24 * HOUR);
      const run = await runScheduledBackup(ctx(clock));
      assert.ok(run.taken, `day ${day}`);
      taken.push(backupFileName(clock.ms));
    }
    assert.deepEqual(readdirSync(backups).sort(), ['operator-notes.txt', ...taken.slice(-3)].sort());
  });

  test('a backup another live process is taking is not taken twice; a lock left by a dead process is taken over', async () => {
    const clock = new TestClock(Date.parse('2027-01-01T00:00:00Z'));
    const lock = join(backups, '.pigeon-backup.lock');
    writeFileSync(lock, String(process.ppid));
    assert.equal((await runScheduledBackup(ctx(clock))).taken, null);
    writeFileSync(lock, '999999999');
    assert.ok((await runScheduledBackup(ctx(clock))).taken);
    assert.equal(existsSync(lock), false);
  });

  test('the settings are checked at start', () => {
    assert.equal(loadConfig({ DATABASE_URL: `sqlite:${path}` }).backup, null, 'off by default');
    assert.deepEqual(loadConfig({ DATABASE_URL: `sqlite:${path}`, BACKUP_DIR: '/b', BACKUP_INTERVAL_HOURS: '6' }).backup, { dir: '/b', intervalHours: 6, keep: 7 });
    for (const env of [
      { BACKUP_INTERVAL_HOURS: '24' },
      { BACKUP_DIR: '/b' },
      { BACKUP_DIR: '/b', BACKUP_INTERVAL_HOURS: '24', DATABASE_URL: 'postgres://p@127.0.0.1/p' },
      { BACKUP_DIR: '/b', BACKUP_INTERVAL_HOURS: '24', BACKUP_KEEP: '0' },
    ]) {
      assert.throws(() => loadConfig({ DATABASE_URL: `sqlite:${path}`, ...env }), ConfigError, JSON.stringify(env));
    }
  });
});
