/**
 * The SQLite data folder turns read-only under load, for real: the database lives on a small
 * ext4 file system (a loop device) mounted `errors=remount-ro`, and the test makes the kernel
 * report an error on it, which remounts it read-only at once, as a failing disk does. (A plain
 * `mount -o remount,ro` is refused while files are open for writing, so it cannot happen under a
 * running server.)
 *
 * What must hold: every send is answered 200 or 503 `storage_full` with `Retry-After` (never a
 * 500), `/ready` answers 503 saying the folder is read-only, the log says so at error, and the
 * process stays up. Such a file system comes back only through fsck and a new mount, which the
 * open files of the running server cannot follow: the operator restarts Pigeon then
 * (docs/deployment.md, "When things fail").
 *
 * Needs root and loop devices; skipped otherwise. Its own SQLite file whatever TEST_DATABASE_URL
 * says, so it runs in the SQLite run only.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { openStore } from '../../src/store/connect.ts';
import { migrateToLatest } from '../../src/store/migrate.ts';
import { createCustomer } from '../helpers/customers.ts';
import { assertOnlyOkOrUnavailable, readiness, startLoad, unmount } from '../helpers/fault-load.ts';
import { freePort, startPigeon, type PigeonProcess } from '../helpers/processes.ts';
import { onlyInRunOf, serviceContext } from '../helpers/test-store.ts';
import { waitFor } from '../helpers/wait-for.ts';

const isRoot = process.getuid?.() === 0;

describe('the SQLite data folder turns read-only under load', { skip: onlyInRunOf('sqlite') || (!isRoot && 'mounting a file system needs root') }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-ro-fault-'));
  const image = join(dir, 'disk.img');
  const data = join(dir, 'data');
  const databaseUrl = `sqlite:${join(data, 'pigeon.db')}`;
  let mounted = false;
  let server: PigeonProcess | null = null;
  let unsupported: string | null = null;

  before(() => {
    mkdirSync(data);
    try {
      execFileSync('truncate', ['-s', '48M', image]);
      execFileSync('mkfs.ext4', ['-q', '-F', image], { stdio: 'ignore' });
      execFileSync('mount', ['-o', 'loop,errors=remount-ro', image, data], { stdio: 'pipe' });
      mounted = true;
    } catch (err) {
      unsupported = `no loop-mounted ext4 here: ${String(err)}`;
    }
  });

  after(async () => {
    await server?.kill();
    if (mounted) unmount(data);
    rmSync(dir, { recursive: true, force: true });
  });

  test('503 storage_full, /ready and the log say the folder is read-only, the process stays up', { timeout: 90_000 }, async (t) => {
    if (unsupported) return t.skip(unsupported);
    const device = basename(execFileSync('findmnt', ['-n', '-o', 'SOURCE', data], { encoding: 'utf8' }).trim());
    const trigger = `/sys/fs/ext4/${device}/trigger_fs_error`;
    if (!existsSync(trigger)) return t.skip(`this kernel has no ${trigger}`);

    // The test's own connection is closed before the fault: nothing of it is left on that disk.
    const store = openStore(databaseUrl);
    await migrateToLatest(store.db);
    const { key } = await createCustomer(serviceContext(store, { DATABASE_URL: databaseUrl }), { name: 'Fault', email: 'fault@example.com', credits: 1_000_000 });
    await store.close();

    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    server = await startPigeon(['serve'], { DATABASE_URL: databaseUrl, PORT: String(port), SIM_DELIVERY_DELAY_MS: '50', RATE_LIMIT_MAX: '1000000', LOG_REQUESTS: 'false' });
    const ready = () => readiness(base);
    const load = startLoad(`${base}/v1`, key);
    let readyDuring: Awaited<ReturnType<typeof ready>> | null = null;
    try {
      await waitFor(() => load.count((a) => a.status === 200) >= 100, { timeout: 20_000, message: () => `100 sends before the fault:\n${server!.output().slice(-2000)}` });
      writeFileSync(trigger, 'pigeon fault test');
      await waitFor(
        async () => {
          readyDuring = await ready();
          return readyDuring.status === 503 && load.count((a) => a.code === 'storage_full') >= 20;
        },
        { timeout: 20_000, interval: 100, message: () => `503 storage_full and /ready 503: ${JSON.stringify(readyDuring)}\n${server!.output().slice(-2000)}` },
      );
    } finally {
      await load.stop();
    }
    assert.match(readyDuring!.json.checks.database ?? '', /^read-only: /);
    assert.equal(server.child.exitCode, null, 'pigeon serve is still running');
    assert.equal((await fetch(`${base}/health`)).status, 200);
    assertOnlyOkOrUnavailable(load.answers, 'storage_full', '30');
    const log = server.output();
    assert.match(log, /"level":50.*store unavailable: the folder of the database is read-only/);
    assert.doesNotMatch(log, /"msg":"unhandled error"/);
    console.log(`# ${load.answers.length} requests: ${load.count((a) => a.status === 200)} answered 200, ${load.count((a) => a.status === 503)} 503 storage_full`);
  });
});
