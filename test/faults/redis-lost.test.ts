/**
 * Redis lost and back under load, for real: a throwaway `redis-server` on 127.0.0.1 shared by two
 * `pigeon serve` processes (one with workers, one API only) on one database, killed while 16
 * clients send through both, then started again on the same port.
 *
 * What must hold: sends keep working while Redis is away (rate limits fall back to per-process
 * counters, and the log says so), no request fails; once Redis is back its counters are used
 * again, and a key revoked, a Sender ID approved and a number assigned after it returned reach
 * both processes within 5 s of being made (access decisions never depended on Redis: they follow the
 * database's access revision). Finally every message is delivered, sent once, and the balance
 * equals the ledger.
 *
 * On SQLite by default; on a PostgreSQL schema of its own under `npm run test:pg`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Store } from '../../src/store/connect.ts';
import { revokeApiKey, createApiKey } from '../../src/services/keys/api-keys.ts';
import { approveSenderId, registerSenderId } from '../../src/services/sender-ids/sender-ids.ts';
import { assignNumber } from '../../src/services/numbers/numbers.ts';
import { createCustomer } from '../helpers/customers.ts';
import { checkOutcome, settled, simulatorSubmissions, startLoad } from '../helpers/fault-load.ts';
import { freePort, startPigeon, type PigeonProcess } from '../helpers/processes.ts';
import { createRedisServer, redisAvailable, type RedisServer } from '../helpers/redis-server.ts';
import { processDatabase, serviceContext, testDialect } from '../helpers/test-store.ts';
import { waitFor } from '../helpers/wait-for.ts';

const CREDITS = 1_000_000;
/** How soon a change must reach every process once Redis is back. */
const PROPAGATION_MS = 5000;

describe(`Redis lost and back under load (${testDialect})`, { skip: !redisAvailable && 'redis-server is not installed' }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-redis-fault-'));
  const simLog = join(dir, 'sim.log');
  const database = processDatabase('redisfault', dir);
  let redis: RedisServer;
  let store: Store;
  const servers: PigeonProcess[] = [];

  before(async () => {
    redis = await createRedisServer();
    store = await database.open();
  });

  after(async () => {
    await Promise.all(servers.map((s) => s.kill()));
    await redis?.stop();
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('sends go on without Redis; changes made after its return reach both processes within 5 s', { timeout: 110_000 }, async () => {
    const ctx = serviceContext(store, { DATABASE_URL: database.url });
    const { accountId, key } = await createCustomer(ctx, { name: 'Fault', email: 'fault@example.com', credits: CREDITS });
    const spare = await createApiKey(ctx, accountId, { label: 'to revoke' });
    const env = {
      DATABASE_URL: database.url,
      REDIS_URL: redis.url,
      SIM_DELIVERY_DELAY_MS: '50',
      SIM_LOG_FILE: simLog,
      RATE_LIMIT_MAX: '1000000',
      LOG_REQUESTS: 'false',
    };
    const ports = [await freePort(), await freePort()];
    servers.push(await startPigeon(['serve'], { ...env, PORT: String(ports[0]) }));
    servers.push(await startPigeon(['serve', '--no-workers'], { ...env, PORT: String(ports[1]) }));
    const bases = ports.map((p) => `http://127.0.0.1:${p}/v1`);
    const output = () => servers.map((s) => s.output().slice(-1500)).join('\n---\n');
    const send = async (base: string, apiKey: string, from: string) => {
      const res = await fetch(`${base}/sms/send`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ to: '+14155553001', from, message: 'probe' }),
        signal: AbortSignal.timeout(10_000),
      });
      return { status: res.status, code: ((await res.json()) as { code?: string }).code };
    };
    const counters = () => execFileSync('redis-cli', ['-h', '127.0.0.1', '-p', String(redis.port), '--scan', '--pattern', 'pigeon:rl:*'], { encoding: 'utf8' }).trim();

    const loads = bases.map((base, i) => startLoad(base, key, { clients: 8, first: i * 1_000_000 }));
    const ok = () => loads.reduce((n, l) => n + l.count((a) => a.status === 200), 0);
    try {
      await waitFor(() => ok() >= 100, { timeout: 20_000, message: () => `100 sends with Redis:\n${output()}` });
      assert.notEqual(counters(), '', 'the rate limits count in Redis');

      await redis.stop();
      const okBefore = ok();
      await waitFor(() => ok() >= okBefore + 200 && servers.every((s) => s.output().includes('Redis rate-limit store unavailable')), {
        timeout: 20_000,
        message: () => `sends without Redis:\n${output()}`,
      });

      await redis.start();
      const back = Date.now();
      // The changes, made in the database as the operator's command line makes them. The time
      // they take to commit under the load is the database's, not the propagation's: the clock
      // starts when they are made.
      await revokeApiKey(ctx, spare.id);
      const beta = await registerSenderId(ctx, accountId, 'Beta');
      await approveSenderId(ctx, beta.id);
      const number = await assignNumber(ctx, accountId, '+14155550123');
      const made = Date.now();
      for (const base of bases) {
        await waitFor(async () => (await send(base, spare.key, 'Acme')).code === 'api_key_revoked', { timeout: PROPAGATION_MS, interval: 50, message: `the revocation at ${base}` });
        await waitFor(async () => (await send(base, key, 'Beta')).status === 200, { timeout: PROPAGATION_MS, interval: 50, message: `the approved Sender ID at ${base}` });
        await waitFor(async () => (await send(base, key, number.number)).status === 200, { timeout: PROPAGATION_MS, interval: 50, message: `the assigned number at ${base}` });
      }
      assert.ok(Date.now() - made < PROPAGATION_MS, `changes took ${Date.now() - made} ms to reach both processes (made ${made - back} ms after Redis returned)`);
      // Counting in Redis again: it came back empty.
      await waitFor(() => counters() !== '', { timeout: PROPAGATION_MS, interval: 100, message: () => `rate-limit counters in Redis again:\n${output()}` });
    } finally {
      await Promise.all(loads.map((l) => l.stop()));
    }
    await waitFor(() => settled(store), { timeout: 30_000, interval: 200, message: () => `every message delivered:\n${output()}` });

    const answers = loads.flatMap((l) => l.answers);
    const failed = answers.filter((a) => a.status !== 200);
    assert.deepEqual(
      failed.slice(0, 5).map((a) => `${a.status} ${a.code ?? a.error}`),
      [],
      `${failed.length} of ${answers.length} sends failed`,
    );
    for (const s of servers) assert.doesNotMatch(s.output(), /"msg":"unhandled error"/);
    // The probes' own messages are checked with the rest: delivered, sent once, charged.
    const stored = await checkOutcome(store, { answers, submissions: simulatorSubmissions(simLog), accountId, credits: CREDITS });
    console.log(`# ${answers.length} sends through two processes, all 200; ${stored} messages`);
    for (const s of servers.splice(0)) assert.equal(await s.stop(), 0, s.output().slice(-3000));
  });
});
