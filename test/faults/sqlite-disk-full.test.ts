/**
 * The disk of a SQLite database fills up under load, for real: the database lives on a small
 * tmpfs mounted by the test, and a file written beside it takes the last of its space while 16
 * clients send to a `pigeon serve` whose workers dispatch.
 *
 * What must hold: meanwhile every send is answered 200 or 503 `storage_full` with `Retry-After`
 * (never a 500), `/ready` answers 503 saying the disk is full, and the log says so at error; the
 * process stays up and, once the file is removed, serves again by itself; afterwards every stored
 * message is delivered and was submitted to the carrier exactly once (none half-written: a
 * request has all its messages or none), and the balance equals the ledger.
 *
 * Needs root (to mount); skipped otherwise. Its own SQLite file whatever TEST_DATABASE_URL says,
 * so it runs in the SQLite run only.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, type Store } from '../../src/store/connect.ts';
import { migrateToLatest } from '../../src/store/migrate.ts';
import { createCustomer } from '../helpers/customers.ts';
import { assertOnlyOkOrUnavailable, checkOutcome, readiness, settled, simulatorSubmissions, startLoad, unmount } from '../helpers/fault-load.ts';
import { freePort, startPigeon, type PigeonProcess } from '../helpers/processes.ts';
import { onlyInRunOf, serviceContext } from '../helpers/test-store.ts';
import { waitFor } from '../helpers/wait-for.ts';

const CREDITS = 1_000_000;
const isRoot = process.getuid?.() === 0;

/** Writes `path` until the file system has no space left; returns the bytes written. */
function fillDisk(path: string): number {
  const fd = openSync(path, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  let written = 0;
  try {
    for (;;) written += writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    closeSync(fd);
  }
  return written;
}

describe('the SQLite disk fills up under load', { skip: onlyInRunOf('sqlite') || (!isRoot && 'mounting a tmpfs needs root') }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-disk-fault-'));
  const data = join(dir, 'data');
  const simLog = join(dir, 'sim.log');
  const databaseUrl = `sqlite:${join(data, 'pigeon.db')}`;
  let mounted = false;
  let store: Store;
  let server: PigeonProcess | null = null;

  before(async () => {
    mkdirSync(data);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=24M', 'tmpfs', data]);
    mounted = true;
    store = openStore(databaseUrl);
    await migrateToLatest(store.db);
  });

  after(async () => {
    await server?.kill();
    await store?.close();
    if (mounted) unmount(data);
    rmSync(dir, { recursive: true, force: true });
  });

  test('503 storage_full while full, /ready and the log say why, back by itself when space is freed', { timeout: 110_000 }, async () => {
    const ctx = serviceContext(store, { DATABASE_URL: databaseUrl });
    const { accountId, key } = await createCustomer(ctx, { name: 'Fault', email: 'fault@example.com', credits: CREDITS });
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    server = await startPigeon(['serve'], {
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      SIM_DELIVERY_DELAY_MS: '50',
      SIM_LOG_FILE: simLog,
      JOB_LEASE_MS: '3000',
      RATE_LIMIT_MAX: '1000000',
      LOG_REQUESTS: 'false',
    });
    const ready = () => readiness(base);
    const load = startLoad(`${base}/v1`, key);
    const ok = () => load.count((a) => a.status === 200);
    const full = () => load.count((a) => a.code === 'storage_full');
    const filler = join(data, 'filler');
    try {
      await waitFor(() => ok() >= 100, { timeout: 20_000, message: () => `100 sends before the fault:\n${server!.output().slice(-2000)}` });
      fillDisk(filler);
      let readyDuring: Awaited<ReturnType<typeof ready>> | null = null;
      await waitFor(
        async () => {
          // SQLite frees pages as messages are delivered and their jobs deleted: keep the disk full.
          fillDisk(`${filler}-${Date.now()}`);
          readyDuring = await ready();
          return readyDuring.status === 503 && full() >= 20;
        },
        { timeout: 30_000, interval: 100, message: () => `503 storage_full and /ready 503: ${JSON.stringify(readyDuring)}, ${full()} refused\n${server!.output().slice(-2000)}` },
      );
      assert.match(readyDuring!.json.checks.database ?? '', /^disk full: /);
      for (const name of readdirSync(data).filter((f) => f.startsWith('filler'))) rmSync(join(data, name));
      const okBefore = ok();
      await waitFor(async () => (await ready()).status === 200 && ok() >= okBefore + 100, {
        timeout: 30_000,
        interval: 100,
        message: () => `sends and /ready again once space was freed:\n${server!.output().slice(-3000)}`,
      });
    } finally {
      await load.stop();
    }
    await waitFor(() => settled(store), { timeout: 30_000, interval: 200, message: () => `every message delivered:\n${server!.output().slice(-3000)}` });
    assert.equal(server.child.exitCode, null, 'pigeon serve is still running');

    const { answers } = load;
    assertOnlyOkOrUnavailable(answers, 'storage_full', '30');
    const log = server.output();
    assert.match(log, /"level":50.*store unavailable: the disk of the database is full/);
    // Logged once the store has held for a second (src/services/availability.ts).
    await waitFor(() => /store available again/.test(server!.output()), { timeout: 5000, message: () => server!.output().slice(-2000) });
    assert.doesNotMatch(log, /"msg":"unhandled error"/);
    const stored = await checkOutcome(store, { answers, submissions: simulatorSubmissions(simLog), accountId, credits: CREDITS });
    const kept = (log.match(/dispatch outcomes kept in memory until/g) ?? []).length;
    console.log(`# ${answers.length} requests: ${answers.filter((a) => a.status === 200).length} answered 200, ${answers.filter((a) => a.status === 503).length} 503; ${stored} messages; ${kept} dispatch batches kept in memory while full`);
    assert.equal(await server.stop(), 0, server.output().slice(-3000));
    server = null;
  });
});
