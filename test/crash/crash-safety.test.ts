/**
 * Crash safety: a real `pigeon serve` takes a steady stream of singles and bulks (half of them
 * with an Idempotency-Key) while it is killed with SIGKILL three times and restarted. Afterwards,
 * from the database: every request answered 200 has its messages stored and dispatched; a message
 * exists only for a request that got a 200 or no answer at all (never for one refused with an
 * error); each request's messages are all there or none (never twice); a key whose first attempt
 * got no answer is answered by its retry with the same messages, or is still held by the dead
 * attempt and then sent nothing; every balance equals its ledger and its messages.
 *
 * On SQLite by default (a temp file); on a PostgreSQL schema of its own under `npm run test:pg`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import type { Store } from '../../src/store/connect.ts';
import { createCustomer } from '../helpers/customers.ts';
import { freePort, startPigeon, type PigeonProcess } from '../helpers/processes.ts';
import { processDatabase, serviceContext, testDialect, waitForEmptyQueues } from '../helpers/test-store.ts';
import { waitFor } from '../helpers/wait-for.ts';

const CREDITS = 1_000_000;
const LOOPS = 4;
const BULK_SIZE = 10;
const KILLS = 3;
/** Requests the server answers between two kills: the stream is then in full flow. */
const ANSWERED_BETWEEN_KILLS = 200;

interface Sent {
  n: number;
  bulk: boolean;
  idempotencyKey: string | null;
  body: unknown;
  /** The HTTP status, or null when no answer came (connection refused or reset by the kill). */
  status: number | null;
  messageIds: string[];
  /** For a key whose first attempt got no answer: the status of its retry after the restarts. */
  retryStatus?: number;
}

function recipient(n: number): string {
  // 3000-3996: none of the simulator's special endings, so every message ends up delivered.
  return `+1415${String(n % 1000).padStart(3, '0')}${3000 + (n % 997)}`;
}

describe(`SIGKILL during a steady stream of sends (${testDialect})`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-crash-'));
  const database = processDatabase('crash', dir);
  const databaseUrl = database.url;
  const simLog = join(dir, 'sim.log');
  let server: PigeonProcess | null = null;
  let store: Store;

  before(async () => {
    store = await database.open();
  });

  after(async () => {
    await server?.kill();
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('nothing accepted is lost, nothing refused is charged, balances equal the ledger', { timeout: 120_000 }, async () => {
    const ctx = serviceContext(store, { DATABASE_URL: databaseUrl });
    const { accountId, key } = await createCustomer(ctx, { name: 'Crash', email: 'crash@example.com', credits: CREDITS, label: 'crash' });

    const port = await freePort();
    const env = {
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      SIM_DELIVERY_DELAY_MS: '50',
      SIM_LOG_FILE: simLog,
      JOB_LEASE_MS: '1000',
      RATE_LIMIT_MAX: '1000000',
    };
    server = await startPigeon(['serve'], env);

    const post = async (path: string, body: unknown, idempotencyKey: string | null) => {
      const res = await fetch(`http://127.0.0.1:${port}/v1${path}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(10_000),
      });
      return { status: res.status, json: (await res.json()) as any };
    };

    const sent: Sent[] = [];
    let next = 0;
    let running = true;
    // Closed while the server is down, so the loops wait instead of collecting refused connections.
    let up: Promise<void> = Promise.resolve();
    let inFlight = 0;
    const loop = async () => {
      while (running) {
        await up;
        if (!running) break;
        const n = next++;
        const bulk = n % 4 >= 2;
        const idempotencyKey = n % 2 === 1 ? `crash-${n}` : null;
        const body = bulk
          ? { from: 'Acme', messages: Array.from({ length: BULK_SIZE }, (_, k) => ({ to: recipient(n + k), message: `crash ${n}.${k}` })) }
          : { to: recipient(n), from: 'Acme', message: `crash ${n}` };
        const record: Sent = { n, bulk, idempotencyKey, body, status: null, messageIds: [] };
        sent.push(record);
        inFlight++;
        try {
          const res = await post(bulk ? '/sms/bulk' : '/sms/send', body, idempotencyKey);
          record.status = res.status;
          if (res.status === 200) record.messageIds = bulk ? res.json.messages.map((m: { message_id: string }) => m.message_id) : [res.json.message_id];
        } catch {
          await sleep(30); // down: do not spin while it restarts
        } finally {
          inFlight--;
        }
      }
    };
    const loops = Array.from({ length: LOOPS }, loop);
    const answers = () => sent.filter((s) => s.status !== null).length;
    const flowing = async () => {
      const from = answers();
      await waitFor(() => answers() - from >= ANSWERED_BETWEEN_KILLS, { timeout: 30_000, message: () => `${ANSWERED_BETWEEN_KILLS} answers (${answers() - from} so far)` });
    };

    for (let k = 0; k < KILLS; k++) {
      await flowing();
      // Frozen first, wherever it is in its work, and killed while every loop waits for an answer:
      // a fast server answers a request before the client gets round to the kill, so a kill alone
      // can land between requests. SIGKILL ends a stopped process where it stopped.
      server.signalAll('SIGSTOP');
      await waitFor(() => inFlight === LOOPS, { timeout: 10_000, message: () => `every loop waiting for an answer (${inFlight} of ${LOOPS})` });
      let restarted!: () => void;
      up = new Promise((resolve) => (restarted = resolve));
      await server.kill('SIGKILL');
      server = await startPigeon(['serve'], env);
      restarted();
    }
    await flowing();
    running = false;
    await Promise.all(loops);

    // A client retries what got no answer with the same key; the key is either done (same answer),
    // free (the first attempt never got far), or still held by the killed attempt (409).
    for (const s of sent.filter((x) => x.status === null && x.idempotencyKey)) {
      const res = await post(s.bulk ? '/sms/bulk' : '/sms/send', s.body, s.idempotencyKey);
      s.retryStatus = res.status;
      assert.ok(res.status === 200 || (res.status === 409 && res.json.code === 'idempotency_in_progress'), `retry of ${s.n}: ${res.status} ${JSON.stringify(res.json)}`);
      if (res.status === 200) s.messageIds = s.bulk ? res.json.messages.map((m: { message_id: string }) => m.message_id) : [res.json.message_id];
    }

    // Let the workers drain: nothing left to dispatch or to receive.
    await waitForEmptyQueues(store, 60_000, () => server!.output().slice(-3000));
    assert.equal(await server.stop(), 0, server.output().slice(-3000));
    server = null;

    const answered = sent.filter((s) => s.status === 200).length;
    const unanswered = sent.filter((s) => s.status === null).length;
    const errors = sent.filter((s) => s.status !== null && s.status !== 200);
    const retried = sent.filter((s) => s.retryStatus !== undefined);
    console.log(
      `# ${sent.length} requests: ${answered} answered 200, ${unanswered} without answer, ${errors.length} errors; ` +
        `${retried.filter((s) => s.retryStatus === 200).length} keyed retries answered, ${retried.filter((s) => s.retryStatus === 409).length} still held`,
    );
    assert.ok(answered > 40, `only ${answered} requests were answered`);
    assert.ok(unanswered > 0, 'no request was cut off by a kill: the test did not test anything');

    const messages = await store.db.selectFrom('messages').select(['id', 'body', 'status', 'segments', 'account_id']).execute();
    const byId = new Map(messages.map((m) => [m.id, m]));
    const perRequest = new Map<number, string[]>();
    for (const m of messages) {
      const n = Number(/^crash (\d+)/.exec(m.body)?.[1]);
      perRequest.set(n, [...(perRequest.get(n) ?? []), m.id]);
    }

    // 1. Every 200 has its messages, stored with its text and dispatched to the carrier.
    const submitted = new Set(existsSync(simLog) ? readFileSync(simLog, 'utf8').split('\n').filter(Boolean) : []);
    for (const s of sent) {
      if (s.messageIds.length === 0) continue;
      assert.equal(s.messageIds.length, s.bulk ? BULK_SIZE : 1);
      for (const id of s.messageIds) {
        const m = byId.get(id);
        assert.ok(m, `request ${s.n} was answered ${id}, which is not stored`);
        assert.match(m.body, new RegExp(`^crash ${s.n}(\\.|$)`));
        assert.ok(submitted.has(id), `${id} never reached the carrier`);
        assert.equal(m.status, 'delivered', id);
      }
    }

    // 2. A message exists only for a request that got a 200 or no answer, all of it, once.
    const byN = new Map(sent.map((s) => [s.n, s]));
    for (const [n, ids] of perRequest) {
      const s = byN.get(n);
      assert.ok(s, `messages ${ids.join(', ')} belong to no request`);
      assert.equal(ids.length, s.bulk ? BULK_SIZE : 1, `request ${n} has ${ids.length} messages`);
      if (s.status === null) {
        // The answer was lost; a keyed retry must have returned exactly these messages.
        if (s.idempotencyKey) {
          assert.equal(s.retryStatus, 200, `request ${n}: sent, but its retry got ${s.retryStatus}`);
          assert.deepEqual([...ids].sort(), [...s.messageIds].sort());
        }
      } else {
        assert.equal(s.status, 200, `request ${n} was refused with ${s.status} but has messages`);
        assert.deepEqual([...ids].sort(), [...s.messageIds].sort());
      }
      for (const id of ids) assert.equal(byId.get(id)!.status, 'delivered', id);
    }
    for (const s of sent) if (s.messageIds.length > 0) assert.ok(perRequest.has(s.n), `request ${s.n} has no messages`);

    // 3. The balance equals the ledger, and the ledger's debits are exactly the stored messages.
    const balance = Number((await store.db.selectFrom('accounts').select('credits').where('id', '=', accountId).executeTakeFirstOrThrow()).credits);
    const ledger = await store.db
      .selectFrom('credit_ledger')
      .select([sql<string>`coalesce(sum(amount), 0)`.as('sum'), sql<string>`coalesce(sum(case when kind = 'debit' then amount else 0 end), 0)`.as('debits')])
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow();
    const segments = messages.reduce((n, m) => n + m.segments, 0);
    assert.equal(Number(ledger.sum), balance, 'balance vs ledger');
    assert.equal(-Number(ledger.debits), segments, 'debits vs stored messages');
    assert.equal(balance, CREDITS - segments, 'balance vs stored messages');
  });
});
