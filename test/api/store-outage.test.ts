/**
 * A store that cannot take writes, in process: the API's answer (503 `storage_full` with
 * `Retry-After`, from a SQLite file whose page limit stands for a full disk), and dispatch keeping
 * the outcomes the carrier gave until the database takes them, so that nothing is submitted
 * twice. The real outages (PostgreSQL restarted, a disk filled, Redis killed) are in test/faults/.
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { Context } from '../../src/services/context.ts';
import { Dispatcher, RECLAIM_GRACE_MS } from '../../src/services/messages/dispatch-messages.ts';
import { StoreCondition } from '../../src/store/condition.ts';
import { claimJobs } from '../../src/store/repositories/jobs.repository.ts';
import { harness, type Harness } from '../helpers/harness.ts';
import { testDialect } from '../helpers/test-store.ts';

describe('a store that cannot take writes', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await harness();
  });
  afterEach(async () => {
    await h.close();
  });

  test('a send to a full SQLite disk is 503 storage_full with Retry-After, nothing charged, and sends again once there is room', { skip: testDialect !== 'sqlite' && 'a page limit is SQLite\'s' }, async () => {
    const { key, accountId } = await h.customer({ credits: 10_000 });
    const pages = Number((await sql<{ page_count: number }>`pragma page_count`.execute(h.ctx.store.db)).rows[0]!.page_count);
    await sql.raw(`pragma max_page_count = ${pages}`).execute(h.ctx.store.db);
    const messages = Array.from({ length: 200 }, (_, i) => ({ to: `+1415555${String(3000 + i).padStart(4, '0')}`, message: 'x'.repeat(500) }));
    const res = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', messages } });
    assert.equal(res.statusCode, 503, res.body);
    assert.equal(res.json().code, 'storage_full');
    assert.equal(res.json().docs_url, 'https://pigeon.test/docs/errors#storage_full');
    assert.equal(res.headers['retry-after'], '30');
    const credits = await h.request('GET', '/v1/account', { key });
    assert.equal(credits.json().data.credits_remaining, 10_000, 'nothing debited');
    assert.equal(Number((await sql<{ n: number }>`select count(*) as n from messages where account_id = ${accountId}`.execute(h.ctx.store.db)).rows[0]!.n), 0);
    await sql.raw('pragma max_page_count = 1073741823').execute(h.ctx.store.db);
    const again = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', messages } });
    assert.equal(again.statusCode, 200, again.body);
  });

  test('outcomes the database could not take wait in memory and are recorded first; no loop of the process submits them again', async () => {
    const { key } = await h.customer({ credits: 100 });
    for (let i = 0; i < 3; i++) assert.equal((await h.request('POST', '/v1/sms/send', { key, body: { to: `+1415555300${i}`, from: 'Acme', message: 'hi' } })).statusCode, 200);
    // The database refuses every transaction, as during an outage, while reads still work.
    let down = true;
    const outage = Object.assign(new Error('terminating connection due to administrator command'), { code: testDialect === 'postgres' ? '57P01' : 'SQLITE_FULL' });
    const db = new Proxy(h.ctx.store.db, {
      get(target, property) {
        if (property === 'transaction' && down) return () => ({ execute: async () => Promise.reject(outage) });
        const value = Reflect.get(target, property, target) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const ctx: Context = { ...h.ctx, store: { ...h.ctx.store, db } };
    const leaseMs = 1000;
    const dispatcher = new Dispatcher(ctx, h.carrier, leaseMs);
    const sibling = new Dispatcher(ctx, h.carrier, leaseMs);
    const claimedAt = h.clock.now();
    const jobs = await claimJobs(h.ctx.store.db, 'dispatch', 10, claimedAt, leaseMs);
    assert.equal(jobs.length, 3);
    await assert.rejects(dispatcher.dispatch(jobs, claimedAt), outage);
    assert.equal(dispatcher.holding, 3);
    assert.deepEqual([...h.carrier.submitted.values()], [1, 1, 1]);
    await assert.rejects(dispatcher.settle(), outage);
    assert.equal(dispatcher.holding, 3);
    const runAts = async () => (await h.ctx.store.db.selectFrom('jobs').select('run_at').where('queue', '=', 'dispatch').execute()).map((j) => Number(j.run_at));
    assert.deepEqual(await runAts(), [claimedAt + leaseMs, claimedAt + leaseMs, claimedAt + leaseMs]);

    // Past half the lease, a settle that still cannot record pushes the lease a whole lease on,
    // where the database lets it (here the outage refuses transactions only).
    h.clock.advance(leaseMs * 0.6);
    await assert.rejects(dispatcher.settle(), outage);
    const extended = h.clock.now() + leaseMs;
    assert.deepEqual(await runAts(), [extended, extended, extended]);

    // The lease runs out while the database is still away: another loop claims the jobs, and
    // leaves them to the one holding their outcomes.
    h.clock.advance(leaseMs + 1);
    const later = h.clock.now();
    const again = await claimJobs(h.ctx.store.db, 'dispatch', 10, later, leaseMs);
    assert.equal(again.length, 3);
    down = false;
    await sibling.dispatch(again, later);
    assert.deepEqual([...h.carrier.submitted.values()], [1, 1, 1], 'not submitted again');

    await dispatcher.settle();
    assert.equal(dispatcher.holding, 0);
    const statuses = await h.ctx.store.db.selectFrom('messages').select('status').execute();
    assert.deepEqual(
      statuses.map((m) => m.status),
      ['sent', 'sent', 'sent'],
    );
    const left = await h.ctx.store.db.selectFrom('jobs').select('id').where('queue', '=', 'dispatch').execute();
    assert.deepEqual(left, []);
    // Nothing held any more: the next round claims as usual.
    await dispatcher.settle();
  });

  test('just after an outage, another process leaves the jobs whose lease ran out to the process that may hold their outcomes, and takes them only once that has had time to record', async () => {
    const { key } = await h.customer({ credits: 100 });
    for (let i = 0; i < 2; i++) assert.equal((await h.request('POST', '/v1/sms/send', { key, body: { to: `+1415555310${i}`, from: 'Acme', message: 'hi' } })).statusCode, 200);
    const leaseMs = 1000;
    // A claim by a process that then went quiet (it holds the outcome of one, and died with the other).
    const claimedAt = h.clock.now();
    const first = await claimJobs(h.ctx.store.db, 'dispatch', 10, claimedAt, leaseMs);
    assert.equal(first.length, 2);
    h.clock.advance(leaseMs + 1);
    // This process saw the outage and its end a moment ago; the leases have run out meanwhile.
    const other: Context = { ...h.ctx, store: { ...h.ctx.store } };
    other.store.condition.observe(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }));
    other.store.condition.recovered();
    const dispatcher = new Dispatcher(other, h.carrier, leaseMs);
    const reclaimed = await claimJobs(h.ctx.store.db, 'dispatch', 10, h.clock.now(), leaseMs);
    assert.deepEqual(reclaimed.map((j) => j.attempts), [2, 2]);
    const summary = await dispatcher.dispatch(reclaimed, h.clock.now());
    assert.equal(summary.skipped, 2);
    assert.equal(h.carrier.submitted.size, 0, 'nothing submitted while the holder may still record');
    const due = await claimJobs(h.ctx.store.db, 'dispatch', 10, h.clock.now() + RECLAIM_GRACE_MS - 1000, leaseMs);
    assert.deepEqual(due, [], 'left alone for the grace');
    // The grace over (the holder died): the jobs go out, once each.
    h.clock.advance(RECLAIM_GRACE_MS);
    const later = await claimJobs(h.ctx.store.db, 'dispatch', 10, h.clock.now(), leaseMs);
    assert.equal(later.length, 2);
    const fresh = new Dispatcher({ ...h.ctx, store: { ...h.ctx.store, condition: new StoreCondition() } }, h.carrier, leaseMs);
    await fresh.dispatch(later, h.clock.now());
    assert.deepEqual([...h.carrier.submitted.values()], [1, 1]);
  });
});
