/**
 * PostgreSQL failing over to its replica under load, for real: a throwaway primary with a
 * streaming standby that has every commit before it is acknowledged (synchronous replication, as
 * a failover without loss needs), both on 127.0.0.1, behind one address (a TCP forwarder, as a
 * virtual IP, HAProxy or PgBouncer stands in front of a pair). While 16 clients send and the
 * workers dispatch, the primary crashes, the address moves to the standby before it is promoted
 * (it answers reads and refuses writes), then the standby is promoted.
 *
 * What must hold: every request is answered 200 or 503 `service_unavailable` with `Retry-After`
 * (a write refused by a standby still in recovery included, never a 500); `/ready` says 503
 * while the address leads to no primary; the pool reconnects to the new primary by itself; every
 * message accepted before, during and after reaches its final state, submitted to the carrier
 * exactly once; the balance equals the ledger.
 *
 * Its own PostgreSQL clusters whatever TEST_DATABASE_URL says, so it runs in `npm run test:pg` only.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { openStore, type Store } from '../../src/store/connect.ts';
import { migrateToLatest } from '../../src/store/migrate.ts';
import { createCustomer } from '../helpers/customers.ts';
import { assertOnlyOkOrUnavailable, checkOutcome, readiness, settled, simulatorSubmissions, startLoad } from '../helpers/fault-load.ts';
import { createPgCluster, createPgStandby, pgClusterAvailable, type PgCluster, type PgStandby } from '../helpers/pg-cluster.ts';
import { freePort, startPigeon, type PigeonProcess } from '../helpers/processes.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';
import { onlyInRunOf, serviceContext } from '../helpers/test-store.ts';
import { waitFor } from '../helpers/wait-for.ts';

const CREDITS = 1_000_000;
/** Short, so that the outage outlasts it: a job whose outcome was lost would then go out again. */
const LEASE_MS = 3000;

describe('PostgreSQL failing over to its replica under load', { skip: onlyInRunOf('postgres') || (!pgClusterAvailable && 'no PostgreSQL server binaries') }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-pg-failover-'));
  const simLog = join(dir, 'sim.log');
  let primary: PgCluster;
  let standby: PgStandby;
  let address: TcpProxy;
  let store: Store;
  let server: PigeonProcess | null = null;

  before(async () => {
    primary = await createPgCluster();
    const direct = openStore(primary.url);
    await migrateToLatest(direct.db);
    standby = await createPgStandby(primary);
    // Synchronous from here on: a commit returns once the standby has it.
    await sql`ALTER SYSTEM SET synchronous_standby_names = '*'`.execute(direct.db);
    await sql`SELECT pg_reload_conf()`.execute(direct.db);
    await waitFor(async () => (await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_replication WHERE sync_state = 'sync'`.execute(direct.db)).rows[0]!.n === 1);
    await direct.close();
    address = await startTcpProxy(primary.port);
    store = openStore(`postgres://postgres@127.0.0.1:${address.port}/postgres`);
  });

  after(async () => {
    await server?.kill();
    await store?.close();
    await address?.close();
    await standby?.destroy();
    await primary?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  test('primary crashed, address moved, standby promoted: 503 meanwhile, back by itself, every message sent once', { timeout: 110_000 }, async () => {
    const databaseUrl = `postgres://postgres@127.0.0.1:${address.port}/postgres`;
    const ctx = serviceContext(store, { DATABASE_URL: databaseUrl });
    const { accountId, key } = await createCustomer(ctx, { name: 'Failover', email: 'failover@example.com', credits: CREDITS });
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    server = await startPigeon(['serve'], {
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      SIM_DELIVERY_DELAY_MS: '50',
      SIM_LOG_FILE: simLog,
      JOB_LEASE_MS: String(LEASE_MS),
      RATE_LIMIT_MAX: '1000000',
      LOG_REQUESTS: 'false',
    });
    const load = startLoad(`${base}/v1`, key);
    const ok = () => load.count((a) => a.status === 200);
    const diagnostics = () => server!.output().slice(-3000);
    try {
      await waitFor(() => ok() >= 100, { timeout: 20_000, message: () => `100 sends before the fault:\n${diagnostics()}` });
      await primary.stop('immediate');
      address.switchTo(standby.port);
      const movedAt = Date.now();
      // The address leads to a standby still in recovery: reads work, writes are refused.
      let readyDuring: Awaited<ReturnType<typeof readiness>> | null = null;
      await waitFor(
        async () => {
          readyDuring = await readiness(base);
          return readyDuring.status === 503 && load.count((a) => a.status === 503) >= 20 && Date.now() - movedAt > LEASE_MS + 500;
        },
        { timeout: 20_000, interval: 100, message: () => `503s and /ready 503 with no primary: ${JSON.stringify(readyDuring)}\n${diagnostics()}` },
      );
      assert.match(readyDuring!.json.checks.database!, /standby|read-only|unreachable/);
      await standby.promote();
      const okBefore = ok();
      await waitFor(async () => (await readiness(base)).status === 200 && ok() >= okBefore + 100, {
        timeout: 30_000,
        interval: 100,
        message: () => `sends and /ready again after the promotion:\n${diagnostics()}`,
      });
    } finally {
      await load.stop();
    }
    await waitFor(() => settled(store), { timeout: 30_000, interval: 200, message: () => `every message delivered:\n${diagnostics()}` });
    assert.equal(server.child.exitCode, null, 'pigeon serve is still running');
    const { answers } = load;
    assertOnlyOkOrUnavailable(answers, 'service_unavailable', '5');
    assert.doesNotMatch(server.output(), /"msg":"unhandled error"/);
    const stored = await checkOutcome(store, { answers, submissions: simulatorSubmissions(simLog), accountId, credits: CREDITS });
    console.log(`# ${answers.length} requests: ${ok()} answered 200, ${answers.filter((a) => a.status === 503).length} 503; ${stored} messages, each submitted once`);
    assert.equal(await server.stop(), 0, diagnostics());
    server = null;
  });
});
