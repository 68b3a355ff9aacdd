/**
 * PostgreSQL restarted under load, for real: a throwaway cluster on 127.0.0.1 (never the
 * machine's own server) is stopped in `fast` mode, then in `immediate` mode (a crash, with
 * recovery on start), while 16 clients send to a `pigeon serve` whose workers dispatch. Each
 * outage lasts past the dispatch lease, so that a job whose outcome was not recorded would be
 * claimed and submitted again.
 *
 * What must hold: during the outage every request is answered, quickly, 503
 * `service_unavailable` with `Retry-After` (never a 500, never a hang, never a reset), and
 * `/ready` says 503 `unreachable`; the process stays up, logs why, and serves again by itself once
 * PostgreSQL is back; afterwards every stored message is delivered and was submitted to the
 * carrier exactly once, and the balance equals the ledger. And with PostgreSQL unreachable at
 * start, `pigeon serve` exits 1 naming DATABASE_URL, without a stack trace.
 *
 * Its own PostgreSQL cluster whatever TEST_DATABASE_URL says, so it runs in `npm run test:pg` only.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, type Store } from '../../src/store/connect.ts';
import { migrateToLatest } from '../../src/store/migrate.ts';
import { createCustomer } from '../helpers/customers.ts';
import { assertOnlyOkOrUnavailable, checkOutcome, readiness, settled, simulatorSubmissions, startLoad } from '../helpers/fault-load.ts';
import { createPgCluster, pgClusterAvailable, type PgCluster } from '../helpers/pg-cluster.ts';
import { freePort, spawnPigeon, startPigeon, type PigeonProcess } from '../helpers/processes.ts';
import { onlyInRunOf, serviceContext } from '../helpers/test-store.ts';
import { waitFor } from '../helpers/wait-for.ts';

const CREDITS = 1_000_000;
/** Short, so that each outage outlasts it: a job whose outcome was lost would then go out again. */
const LEASE_MS = 3000;

describe('PostgreSQL restarted under load', { skip: onlyInRunOf('postgres') || (!pgClusterAvailable && 'no PostgreSQL server binaries') }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-pg-fault-'));
  const simLog = join(dir, 'sim.log');
  let cluster: PgCluster;
  let store: Store;
  let server: PigeonProcess | null = null;

  before(async () => {
    cluster = await createPgCluster();
    store = openStore(cluster.url);
    await migrateToLatest(store.db);
  });

  after(async () => {
    await server?.kill();
    await store?.close();
    await cluster?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  test('unreachable at start: exit 1 naming DATABASE_URL and what to do, no stack trace', async () => {
    const nobody = await freePort();
    const child = spawnPigeon(['serve'], { PATH: process.env.PATH, DATABASE_URL: `postgres://postgres@127.0.0.1:${nobody}/postgres`, PORT: String(await freePort()) });
    const code = await new Promise<number | null>((resolve) => child.child.once('exit', resolve));
    assert.equal(code, 1, child.output());
    assert.match(child.output(), /DATABASE_URL[\s\S]*cannot be reached \(ECONNREFUSED\)/);
    assert.doesNotMatch(child.output(), /^\s+at /m, 'no stack trace');
  });

  test('fast and immediate restarts: 503 with Retry-After meanwhile, back by itself, every message sent once', { timeout: 110_000 }, async () => {
    const ctx = serviceContext(store, { DATABASE_URL: cluster.url });
    const { accountId, key } = await createCustomer(ctx, { name: 'Fault', email: 'fault@example.com', credits: CREDITS });
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    server = await startPigeon(['serve'], {
      DATABASE_URL: cluster.url,
      PORT: String(port),
      SIM_DELIVERY_DELAY_MS: '50',
      SIM_LOG_FILE: simLog,
      JOB_LEASE_MS: String(LEASE_MS),
      RATE_LIMIT_MAX: '1000000',
      LOG_REQUESTS: 'false',
    });
    const ready = () => readiness(base);
    const load = startLoad(`${base}/v1`, key);
    const ok = () => load.count((a) => a.status === 200);
    try {
      await waitFor(() => ok() >= 100, { timeout: 20_000, message: () => `100 sends before the fault:\n${server!.output().slice(-2000)}` });
      for (const mode of ['fast', 'immediate'] as const) {
        await cluster.stop(mode);
        const stoppedAt = Date.now();
        const refusedBefore = load.count((a) => a.status === 503);
        let readyDuring: Awaited<ReturnType<typeof ready>> | null = null;
        await waitFor(
          async () => {
            readyDuring = await ready();
            return readyDuring.status === 503 && load.count((a) => a.status === 503) >= refusedBefore + 20 && Date.now() - stoppedAt > LEASE_MS + 500;
          },
          { timeout: 20_000, interval: 100, message: () => `503s and /ready 503 after the ${mode} stop: ${JSON.stringify(readyDuring)}\n${server!.output().slice(-2000)}` },
        );
        assert.equal(readyDuring!.json.checks.database, 'unreachable');
        await cluster.start();
        const okBefore = ok();
        await waitFor(async () => (await ready()).status === 200 && ok() >= okBefore + 100, {
          timeout: 30_000,
          interval: 100,
          message: () => `sends and /ready again after the ${mode} restart:\n${server!.output().slice(-3000)}`,
        });
      }
    } finally {
      await load.stop();
    }
    await waitFor(() => settled(store), { timeout: 30_000, interval: 200, message: () => `every message delivered:\n${server!.output().slice(-3000)}` });
    assert.equal(server.child.exitCode, null, 'pigeon serve is still running');

    const { answers } = load;
    assertOnlyOkOrUnavailable(answers, 'service_unavailable', '5');
    const slowest = Math.max(...answers.map((a) => a.ms));
    assert.ok(slowest < 12_000, `a request took ${slowest} ms`);
    const log = server.output();
    assert.match(log, /"level":50.*store unavailable: the database is unreachable/);
    // Logged once the store has held for a second (src/services/availability.ts).
    await waitFor(() => /store available again/.test(server!.output()), { timeout: 5000, message: () => server!.output().slice(-2000) });
    assert.doesNotMatch(log, /"msg":"unhandled error"/);
    // The outage is the store's one line (and one a minute); the worker loops' failed steps stay out of the error level.
    assert.doesNotMatch(log, /"level":50,[^\n]*"queue":/);
    const stored = await checkOutcome(store, { answers, submissions: simulatorSubmissions(simLog), accountId, credits: CREDITS });
    const kept = (log.match(/dispatch outcomes kept in memory until/g) ?? []).length;
    console.log(`# ${answers.length} requests: ${answers.filter((a) => a.status === 200).length} answered 200, ${answers.filter((a) => a.status === 503).length} 503 (slowest ${slowest} ms); ${stored} messages; ${kept} dispatch batches kept in memory over an outage`);
    assert.equal(await server.stop(), 0, server.output().slice(-3000));
    server = null;
  });
});
