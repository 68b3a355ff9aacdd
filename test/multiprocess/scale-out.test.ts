/**
 * Scale-out on PostgreSQL: two API processes (`serve --no-workers`) and two worker processes
 * (`worker`) share one database. 20,000 messages go in through both API processes, single and
 * bulk, for several accounts; in the middle one worker stops, the other is killed with SIGKILL
 * while it holds claimed messages, and a fresh worker takes over. Afterwards every
 * accepted message is where the simulator sends it, each was submitted once (or again only within
 * the killed worker's leased batch), every balance equals its ledger and its sends, and every
 * status change of a message with a callback_url has its webhook event.
 *
 * Runs with `npm run test:pg` (it needs PostgreSQL).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import type { Store } from '../../src/store/connect.ts';
import { simulatedOutcome } from '../../src/carriers/simulator/simulator-carrier.ts';
import type { Context } from '../../src/services/context.ts';
import { createCustomer } from '../helpers/customers.ts';
import { freePort, startPigeon, type PigeonProcess } from '../helpers/processes.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { processDatabase, serviceContext, TEST_DATABASE_URL, waitForEmptyQueues } from '../helpers/test-store.ts';

const TOTAL = 20_000;
const BULK_SIZE = 1000;
const BULKS = 16; // 16,000 in bulk, the rest single
const ACCOUNTS = 3;
const CREDITS = 20_000;

const skip = !TEST_DATABASE_URL.startsWith('postgres') && 'needs PostgreSQL: run with npm run test:pg';

function recipient(i: number): string {
  // One number in forty ends in each of the simulator's special suffixes.
  const suffix = i % 40 === 0 ? '0000' : i % 40 === 10 ? '1111' : i % 40 === 20 ? '2222' : String(3000 + (i % 997)).padStart(4, '0');
  return `+1415${String(i % 1000).padStart(3, '0')}${suffix}`;
}

describe('two API and two worker processes on PostgreSQL', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-mp-'));
  const database = processDatabase('mp', dir);
  const databaseUrl = database.url;
  const processes: PigeonProcess[] = [];
  let store: Store;
  let ctx: Context;

  before(async () => {
    store = await database.open();
    ctx = serviceContext(store, { DATABASE_URL: databaseUrl });
  });

  after(async () => {
    for (const p of processes) await p.kill();
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('20,000 messages, a worker killed mid-way: nothing lost, nothing charged wrongly', { timeout: 600_000 }, async () => {
    const customers: { id: string; key: string }[] = [];
    for (let a = 0; a < ACCOUNTS; a++) {
      const { accountId, key } = await createCustomer(ctx, { name: `Tenant ${a}`, email: `t${a}@mp.test`, credits: CREDITS, label: 'mp' });
      customers.push({ id: accountId, key });
    }

    const common = {
      DATABASE_URL: databaseUrl,
      SIM_DELIVERY_DELAY_MS: '200',
      JOB_LEASE_MS: '3000',
      RATE_LIMIT_MAX: '1000000',
      WEBHOOK_RETRY_DELAYS_MS: '0',
    };
    const ports = [await freePort(), await freePort()];
    for (const port of ports) processes.push(await startPigeon(['serve', '--no-workers'], { ...common, PORT: String(port) }));
    const logs = [join(dir, 'sim-0.log'), join(dir, 'sim-1.log')];
    const workers: PigeonProcess[] = [];
    for (const log of logs) workers.push(await startPigeon(['worker'], { ...common, SIM_LOG_FILE: log }));
    processes.push(...workers);

    const accepted = new Map<string, { account: string; to: string; segments: number; callback: boolean }>();
    const post = async (i: number, path: string, key: string, body: unknown) => {
      const res = await fetch(`http://127.0.0.1:${ports[i % 2]}/v1${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (res.status !== 200) {
        const errors = processes[i % 2]!.output().split('\n').filter((l) => l.includes('"level":50'));
        assert.fail(`${res.status} ${await res.text()}\n${errors.slice(-3).join('\n')}`);
      }
      return res.json() as Promise<any>;
    };

    // The kill must hit a worker holding claimed work: with the other worker stopped, every
    // dispatch claim is the doomed worker's; once it holds some, it is killed. Claimed jobs still
    // leased at that moment, and not before the other stopped, are the messages it held.
    let killed = false;
    let held: { id: string; ref: string }[] = [];
    const leased = () =>
      store.db
        .selectFrom('jobs')
        .select(['id', 'ref', 'attempts'])
        .where('queue', '=', 'dispatch')
        .where('attempts', '>', 0)
        .where('run_at', '>', Date.now())
        .execute();
    const killOne = async () => {
      if (killed) return;
      killed = true;
      // The other worker stops first (SIGTERM: it finishes what it holds and exits; a paused
      // process would keep its open transaction's row locks and stall the API's debits), so
      // every claim from now on is the doomed worker's.
      assert.equal(await workers[1]!.stop(), 0, workers[1]!.output().slice(-2000));
      const before = new Set((await leased()).map((j) => `${j.id}:${j.attempts}`));
      const claimedByDoomed = async () => (await leased()).filter((j) => !before.has(`${j.id}:${j.attempts}`));
      // Work that arrives after the snapshot: the doomed worker may already have claimed
      // everything accepted so far.
      const customer = customers[0]!;
      const start = index;
      index += BULK_SIZE;
      const messages = Array.from({ length: BULK_SIZE }, (_, k) => ({ to: recipient(start + k), message: `After the stop #${k}` }));
      const r = await post(0, '/sms/bulk', customer.key, { from: 'Acme', messages });
      for (const m of r.messages) accepted.set(m.message_id, { account: customer.id, to: messages[m.index]!.to, segments: m.segments, callback: false });
      await waitFor(async () => (await claimedByDoomed()).length > 0, { timeout: 30_000, interval: 5, message: 'the worker to be killed to claim dispatch jobs' });
      await workers[0]!.kill('SIGKILL');
      held = await claimedByDoomed();
      assert.ok(held.length > 0, 'the killed worker held claimed dispatch jobs when it died');
      // A fresh worker takes over: what the dead one held comes back when its leases run out.
      const log = join(dir, 'sim-2.log');
      logs.push(log);
      const replacement = await startPigeon(['worker'], { ...common, SIM_LOG_FILE: log });
      workers.push(replacement);
      processes.push(replacement);
    };

    // Bulk: 16 campaigns of 1,000, alternating API processes and accounts, two at a time.
    let index = 0;
    const bulkJobs: Promise<void>[] = [];
    for (let b = 0; b < BULKS; b++) {
      const customer = customers[b % ACCOUNTS]!;
      const start = index;
      index += BULK_SIZE;
      const callback = b % 4 === 0;
      const messages = Array.from({ length: BULK_SIZE }, (_, k) => ({ to: recipient(start + k), message: `Campaign ${b} #${k}` }));
      bulkJobs.push(
        post(b, '/sms/bulk', customer.key, { from: 'Acme', messages, ...(callback ? { callback_url: 'https://hooks.invalid/pigeon' } : {}) }).then((r) => {
          assert.equal(r.queued, BULK_SIZE);
          for (const m of r.messages) accepted.set(m.message_id, { account: customer.id, to: messages[m.index]!.to, segments: m.segments, callback });
        }),
      );
      if (bulkJobs.length % 2 === 0) await Promise.all(bulkJobs.splice(0));
      if (b === BULKS / 2) await killOne();
    }
    await Promise.all(bulkJobs);

    // Singles: the rest, 32 at a time.
    const singles = TOTAL - index;
    for (let s = 0; s < singles; s += 32) {
      await Promise.all(
        Array.from({ length: Math.min(32, singles - s) }, async (_, k) => {
          const i = index + s + k;
          const customer = customers[i % ACCOUNTS]!;
          const r = await post(i, '/sms/send', customer.key, { to: recipient(i), from: 'Acme', message: `Single ${i}` });
          accepted.set(r.message_id, { account: customer.id, to: recipient(i), segments: r.segments, callback: false });
        }),
      );
    }
    assert.equal(accepted.size, TOTAL);

    // Wait until nothing is left to dispatch or to receive.
    await waitForEmptyQueues(store, 300_000);

    // 1. Every accepted message is where the simulator sends it.
    const rows = await store.db.selectFrom('messages').select(['id', 'recipient', 'status', 'error_code', 'account_id', 'segments', 'sent_at']).execute();
    assert.equal(rows.length, TOTAL);
    const expected = { delivered: 'delivered', failed: 'failed', no_receipt: 'sent', rejected: 'failed' } as const;
    for (const m of rows) {
      assert.ok(accepted.has(m.id), `stored message ${m.id} was accepted`);
      const outcome = simulatedOutcome(m.recipient);
      assert.equal(m.status, expected[outcome], `${m.id} to ${m.recipient}`);
      if (outcome === 'rejected') assert.equal(m.error_code, 'carrier_rejected');
      if (outcome === 'failed') assert.equal(m.error_code, 'subscriber_unreachable');
    }

    // 2. The simulator saw each message once, except within the killed worker's leased batch.
    const seen = new Map<string, number>();
    for (const log of logs) {
      if (!existsSync(log)) continue;
      for (const id of readFileSync(log, 'utf8').split('\n').filter(Boolean)) seen.set(id, (seen.get(id) ?? 0) + 1);
    }
    for (const id of accepted.keys()) assert.ok((seen.get(id) ?? 0) >= 1, `${id} never reached the carrier`);
    const duplicates = [...seen.values()].filter((n) => n > 1).length;
    const killedSaw = new Set(existsSync(logs[0]!) ? readFileSync(logs[0]!, 'utf8').split('\n').filter(Boolean) : []);
    for (const [id, n] of seen) if (n > 1) assert.ok(killedSaw.has(id), `${id} was submitted twice without the killed worker`);
    assert.ok(duplicates <= 500, `${duplicates} duplicates: at most one claimed batch (500) can be repeated`);
    // The messages the killed worker held when it died were finished by its replacement, once:
    // each reached the carrier (a second time only if the killed worker had submitted it before
    // dying), and its job is gone.
    assert.ok(held.length > 0);
    const left = await store.db.selectFrom('jobs').select('id').where('id', 'in', held.map((j) => j.id)).execute();
    assert.deepEqual(left, [], 'the held jobs were finished');
    for (const { ref } of held) {
      const n = seen.get(ref) ?? 0;
      assert.ok(n === 1 || (n === 2 && killedSaw.has(ref)), `${ref}, held by the killed worker, submitted ${n} times`);
    }
    console.log(`# the killed worker held ${held.length} claimed messages`);
    console.log(`# submissions: ${[...seen.values()].reduce((a, b) => a + b, 0)} for ${TOTAL} messages; ${duplicates} repeated after the kill`);

    // 3. Balances: top-ups minus debits plus refunds, equal to the ledger.
    for (const c of customers) {
      const account = await store.db.selectFrom('accounts').select('credits').where('id', '=', c.id).executeTakeFirstOrThrow();
      const ledger = await store.db
        .selectFrom('credit_ledger')
        .select(sql<string>`coalesce(sum(amount), 0)`.as('sum'))
        .where('account_id', '=', c.id)
        .executeTakeFirstOrThrow();
      const mine = rows.filter((m) => m.account_id === c.id);
      const debited = mine.reduce((n, m) => n + m.segments, 0);
      const refunded = mine.filter((m) => simulatedOutcome(m.recipient) === 'rejected').reduce((n, m) => n + m.segments, 0);
      assert.equal(Number(account.credits), CREDITS - debited + refunded, c.id);
      assert.equal(Number(ledger.sum), Number(account.credits), `${c.id} ledger`);
    }

    // 4. No webhook event lost: each status change of a message with a callback_url has its event.
    const events = await store.db.selectFrom('webhook_events').select(['message_id', 'event']).execute();
    const byMessage = new Map<string, string[]>();
    for (const e of events) if (e.message_id) byMessage.set(e.message_id, [...(byMessage.get(e.message_id) ?? []), e.event]);
    for (const m of rows) {
      const info = accepted.get(m.id)!;
      const got = (byMessage.get(m.id) ?? []).sort();
      if (!info.callback) {
        assert.deepEqual(got, [], m.id);
        continue;
      }
      const want = { delivered: ['sms.delivered', 'sms.sent'], failed: ['sms.failed', 'sms.sent'], no_receipt: ['sms.sent'], rejected: ['sms.failed'] }[simulatedOutcome(m.recipient)];
      assert.deepEqual(got, want, m.id);
    }

    // The surviving processes shut down cleanly on SIGTERM.
    for (const p of processes) if (p !== workers[0]) assert.equal(await p.stop(), 0, p.output().slice(-2000));
  });
});
