/**
 * A fair dispatch backlog, through the HTTP interface: one account flooding gets 429 at its share
 * while another keeps sending, dispatch serves the other's messages in turn rather than after the
 * whole flood, the whole service still answers 503 at its limit, and nothing accepted is lost.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';
import { claimJobs, releaseJobs } from '../../src/store/repositories/jobs.repository.ts';
import { ledgerMatchesBalance } from '../../src/services/accounts/accounts.ts';
import { createOperator } from '../../src/services/auth/operators.ts';
import { DashboardClient } from '../helpers/dashboard-client.ts';

const body = (i: number) => ({ to: `+4479111${String(i).padStart(5, '0')}`, message: `flood ${i}` });

describe('fair dispatch backlog', () => {
  let h: Harness;
  before(async () => {
    // Each account may have 40 % of 100 messages waiting: 40.
    h = await harness({ DISPATCH_BACKLOG_LIMIT: '100', DISPATCH_BACKLOG_ACCOUNT_SHARE: '40' });
  });
  after(() => h.close());

  test('an account over its share gets 429 while another keeps sending and is dispatched in turn; nothing accepted is lost', async () => {
    const flood = await h.customer({ credits: 10_000 });
    const quiet = await h.customer({ credits: 100, sender: 'Quiet' });
    const bulk = (n: number, offset: number) => h.request('POST', '/v1/sms/bulk', { key: flood.key, body: { from: 'Acme', messages: Array.from({ length: n }, (_, i) => body(offset + i)) } });

    // An account with nothing waiting may send one request of any size; then it is at its share.
    assert.equal((await bulk(45, 0)).statusCode, 200);
    h.clock.advance(1000); // the backlog is counted at most once a second
    const refused = await bulk(1, 100);
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.json().code, 'rate_limit_exceeded');
    assert.match(refused.json().message, /45 messages waiting for dispatch, and may have 40/);
    assert.ok(Number(refused.headers['retry-after']) >= 1);
    assert.equal(refused.headers['ratelimit-limit'], '40', 'the RateLimit headers count messages waiting against the share');
    assert.equal(refused.headers['ratelimit-remaining'], '0');
    assert.equal(refused.headers['ratelimit-reset'], refused.headers['retry-after']);
    const single = await h.request('POST', '/v1/sms/send', { key: flood.key, body: { from: 'Acme', ...body(200) } });
    assert.equal(single.statusCode, 429);

    // The other account is not held back by the flood: accepted, and dispatched in the first claim.
    const quietSends = await Promise.all(
      Array.from({ length: 5 }, (_, i) => h.request('POST', '/v1/sms/send', { key: quiet.key, body: { from: 'Quiet', ...body(300 + i) } })),
    );
    assert.deepEqual(
      quietSends.map((r) => r.statusCode),
      [200, 200, 200, 200, 200],
    );
    const claimed = await claimJobs(h.ctx.store.db, 'dispatch', 10, h.clock.now(), 60_000);
    const quietIds = new Set(quietSends.map((r) => r.json().message_id));
    assert.equal(claimed.filter((j) => quietIds.has(j.ref)).length, 5, 'the quiet account\'s messages are in the first claim, before most of the older flood');
    await releaseJobs(h.ctx.store.db, claimed.map((j) => j.id), h.clock.now());

    // The whole service still has its limit: 503 for everyone past it.
    const third = await h.customer({ credits: 100, sender: 'Third' });
    assert.equal((await h.request('POST', '/v1/sms/bulk', { key: third.key, body: { from: 'Third', messages: Array.from({ length: 50 }, (_, i) => body(400 + i)) } })).statusCode, 200);
    h.clock.advance(1000);
    const full = await h.request('POST', '/v1/sms/send', { key: quiet.key, body: { from: 'Quiet', ...body(500) } });
    assert.equal(full.statusCode, 503);
    assert.equal(full.json().code, 'service_unavailable');
    assert.ok(Number(full.headers['retry-after']) >= 1);

    // The operator sees each account's backlog.
    await createOperator(h.ctx, 'ops@example.com', 'operator password');
    const ops = new DashboardClient(h.app);
    const form = await ops.get('/operator/login');
    assert.equal((await ops.post('/operator/login', { email: 'ops@example.com', password: 'operator password' }, form.body)).statusCode, 303);
    const page = await ops.get('/operator/backlog');
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /100 messages wait for dispatch \(the limit is 100/);
    assert.ok(page.body.indexOf(third.accountId) < page.body.indexOf(flood.accountId), 'largest backlog first (50 against 45)');
    assert.ok(page.body.includes(quiet.accountId));
    const metrics = (await h.request('GET', '/metrics')).body;
    assert.match(metrics, new RegExp(`pigeon_account_dispatch_backlog\\{account="${flood.accountId}"\\} 45`));
    assert.match(metrics, new RegExp(`pigeon_account_dispatch_oldest_age_seconds\\{account="${quiet.accountId}"\\} \\d`));

    // Once dispatch has worked the backlog off, everyone sends again, and Retry-After came from
    // the drain rate measured between two readings.
    await h.workers.drain();
    h.clock.advance(1000);
    assert.equal((await h.request('POST', '/v1/sms/send', { key: flood.key, body: { from: 'Acme', ...body(600) } })).statusCode, 200);
    assert.equal((await h.request('POST', '/v1/sms/send', { key: quiet.key, body: { from: 'Quiet', ...body(601) } })).statusCode, 200);

    // Nothing accepted was lost: every accepted message was handed to the carrier, and each
    // account paid exactly for what was accepted.
    await h.workers.drain();
    for (const [customer, accepted] of [
      [flood, 46],
      [quiet, 6],
      [third, 50],
    ] as const) {
      const reports = (await h.request('GET', '/v1/sms/delivery-reports?limit=100', { key: customer.key })).json();
      assert.equal(reports.pagination.total, accepted);
      assert.ok(reports.data.every((m: { status: string }) => m.status !== 'pending'), 'every accepted message left the backlog');
      const { balance, ledger } = await ledgerMatchesBalance(h.ctx, customer.accountId);
      assert.equal(balance, ledger);
    }
  });
});
