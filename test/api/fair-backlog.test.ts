/**
 * A fair dispatch backlog, through the HTTP interface: one account flooding gets 429 at its share
 * while another keeps sending, even with many bulks at once; dispatch serves the other's messages
 * in turn rather than after the whole flood, the whole service still answers 503 at its limit, and
 * nothing accepted is lost. Retry-After follows the measured drain rate, and /metrics and the
 * operator's page show the largest backlogs and those waiting longest.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';
import { claimJobs, releaseJobs } from '../../src/store/repositories/jobs.repository.ts';
import { ledgerMatchesBalance } from '../../src/services/accounts/accounts.ts';
import { createOperator } from '../../src/services/auth/operators.ts';
import { dispatchJobs } from '../../src/services/messages/dispatch-messages.ts';
import { DashboardClient } from '../helpers/dashboard-client.ts';

const body = (i: number) => ({ to: `+4479111${String(i).padStart(5, '0')}`, message: `flood ${i}` });
/** A message the simulator delivers (its numbers ending 0000, 1111 or 2222 fail). */
const deliverable = (i: number) => ({ to: `+4479${String(i).padStart(7, '0')}5`, message: `flood ${i}` });

async function operatorClient(h: Harness): Promise<DashboardClient> {
  await createOperator(h.ctx, 'ops@example.com', 'operator password');
  const ops = new DashboardClient(h.app);
  const form = await ops.get('/operator/login');
  assert.equal((await ops.post('/operator/login', { email: 'ops@example.com', password: 'operator password' }, form.body)).statusCode, 303);
  return ops;
}

/** Every message the account sent has left the backlog, and it paid for exactly those. */
async function nothingLost(h: Harness, customer: { accountId: string; key: string }, accepted: string[], credits: number): Promise<void> {
  const reports: { message_id: string; status: string }[] = [];
  for (let page = 1; ; page++) {
    const res = (await h.request('GET', `/v1/sms/delivery-reports?limit=100&page=${page}`, { key: customer.key })).json();
    reports.push(...res.data);
    if (res.data.length < 100) break;
  }
  assert.equal(reports.length, accepted.length);
  assert.deepEqual(new Set(reports.map((m) => m.message_id)), new Set(accepted), 'the messages accepted, and only they');
  assert.ok(
    reports.every((m) => m.status === 'sent' || m.status === 'delivered'),
    'every accepted message was handed to the carrier',
  );
  const { balance, ledger } = await ledgerMatchesBalance(h.ctx, customer.accountId);
  assert.equal(balance, ledger);
  assert.equal(balance, credits - accepted.length, 'one credit for each message accepted, none for a refused request');
}

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
    const ops = await operatorClient(h);
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

  test('a flood of concurrent bulks takes an account to its share and no further, while another account is accepted and dispatched in turn', async () => {
    const flood = await h.customer({ credits: 10_000, sender: 'Flood' });
    const other = await h.customer({ credits: 100, sender: 'Other' });
    const share = 40;
    const accepted = { flood: [] as string[], other: [] as string[] };
    // Each round, 20 bulks at once from the flooding account, 5 to 30 times its share of 40 in
    // all (bulks of 60 are each bigger than the share), with the other account's sends among them,
    // all within one second: one reading of the backlog serves the whole round.
    for (const [round, size] of [10, 60, 40].entries()) {
      await h.workers.drain();
      h.clock.advance(1000);
      const requests: Promise<{ who: 'flood' | 'other'; statusCode: number; ids: string[] }>[] = [];
      for (let i = 0; i < 20; i++) {
        const offset = 10_000 * round + 100 * i;
        requests.push(
          h
            .request('POST', '/v1/sms/bulk', { key: flood.key, body: { from: 'Flood', messages: Array.from({ length: size }, (_, j) => deliverable(offset + j)) } })
            .then((r) => ({ who: 'flood' as const, statusCode: r.statusCode, ids: r.statusCode === 200 ? r.json().messages.map((m: { message_id: string }) => m.message_id) : [] })),
        );
        if (i % 4 === 0) {
          requests.push(
            h
              .request('POST', '/v1/sms/send', { key: other.key, body: { from: 'Other', ...deliverable(offset + 99) } })
              .then((r) => ({ who: 'other' as const, statusCode: r.statusCode, ids: r.statusCode === 200 ? [r.json().message_id] : [] })),
          );
        }
      }
      const results = await Promise.all(requests);
      const floodAccepted = results.filter((r) => r.who === 'flood').flatMap((r) => r.ids);
      const otherAccepted = results.filter((r) => r.who === 'other').flatMap((r) => r.ids);
      // Refused with 429 past its share, or 503 when the bulk would also take the whole service
      // past its limit of 100.
      assert.ok(
        results.every((r) => r.statusCode === 200 || (r.who === 'flood' && (r.statusCode === 429 || r.statusCode === 503))),
        `round ${round}: only the flood is refused`,
      );
      assert.equal(otherAccepted.length, 5, `round ${round}: the other account is never refused`);
      // With nothing waiting, one request of any size is accepted; then none past the share.
      assert.ok(floodAccepted.length >= Math.min(size, share) && floodAccepted.length <= Math.max(size, share), `round ${round}: ${floodAccepted.length} accepted in bulks of ${size}, share ${share}`);
      assert.equal((await h.request('GET', '/v1/account', { key: flood.key })).json().data.messages_pending, floodAccepted.length);
      accepted.flood.push(...floodAccepted);
      accepted.other.push(...otherAccepted);

      // The other account's messages go out in turn with the flood's, not after it.
      const claimed = await claimJobs(h.ctx.store.db, 'dispatch', 10, h.clock.now(), 60_000);
      assert.equal(claimed.filter((j) => otherAccepted.includes(j.ref)).length, 5, `round ${round}: the other account's 5 are in the first claim of 10`);
      await dispatchJobs(h.ctx, h.carrier, claimed);
    }

    await h.workers.drain();
    h.clock.advance(2000);
    await h.workers.drain();
    await nothingLost(h, flood, accepted.flood, 10_000);
    await nothingLost(h, other, accepted.other, 100);
  });
});

describe('Retry-After from the measured drain rate', () => {
  let h: Harness;
  before(async () => {
    h = await harness({ DISPATCH_BACKLOG_LIMIT: '100', DISPATCH_BACKLOG_ACCOUNT_SHARE: '40' });
  });
  after(() => h.close());

  test('the excess over the bound divided by the rate dispatch worked the backlog off at, 1 to 60 s; 5 s before a rate was measured', async () => {
    const a = await h.customer({ credits: 1000 });
    const c = await h.customer({ credits: 1000, sender: 'Other' });
    const bulk = (key: string, from: string, n: number) => h.request('POST', '/v1/sms/bulk', { key, body: { from, messages: Array.from({ length: n }, (_, i) => body(i)) } });
    const retryAfter = (r: { statusCode: number; headers: Record<string, unknown> }, status: number) => {
      assert.equal(r.statusCode, status);
      return r.headers['retry-after'];
    };

    // A quiet spell first: readings of an empty backlog say nothing of the rate.
    assert.equal((await bulk(a.key, 'Acme', 1)).statusCode, 200);
    await h.workers.drain();
    h.clock.advance(60_000);
    assert.equal((await bulk(a.key, 'Acme', 40)).statusCode, 200);
    h.clock.advance(1000);
    assert.equal(retryAfter(await bulk(a.key, 'Acme', 1), 429), '5', 'no rate measured yet: 5 s, not the 60 s of a rate of 0');

    // Dispatch works off 10 of the 40 in the next 2 s: 5 messages/s.
    const claimed = await claimJobs(h.ctx.store.db, 'dispatch', 10, h.clock.now(), 60_000);
    assert.equal(claimed.length, 10);
    await dispatchJobs(h.ctx, h.carrier, claimed);
    h.clock.advance(2000);
    // 30 waiting + 30 asked - 40 allowed: 20 to work off at 5/s.
    assert.equal(retryAfter(await bulk(a.key, 'Acme', 30), 429), '4');
    assert.equal(retryAfter(await bulk(a.key, 'Acme', 11), 429), '1', '1 over: at least a second');
    // The whole service: 30 waiting + 90 asked - 100 allowed, at the same rate.
    assert.equal(retryAfter(await bulk(c.key, 'Other', 90), 503), '4');
    assert.equal(retryAfter(await bulk(c.key, 'Other', 400), 503), '60', '330 over at 5/s: at most a minute');

    await h.workers.drain();
  });
});

describe('the accounts shown at /metrics and on the operator page', () => {
  let h: Harness;
  before(async () => {
    h = await harness({ DISPATCH_BACKLOG_LIMIT: '10000' });
  });
  after(() => h.close());

  test('the largest backlogs and those waiting longest: one old message is not hidden behind larger backlogs', async () => {
    const old = await h.customer({ credits: 10, name: 'Old' });
    assert.equal((await h.request('POST', '/v1/sms/send', { key: old.key, body: { from: 'Acme', ...body(0) } })).statusCode, 200);
    h.clock.advance(600_000);
    // Fifty accounts with more waiting, all younger: more than either list's 10 or 50 largest.
    const larger: string[] = [];
    for (let i = 0; i < 50; i++) {
      const c = await h.customer({ credits: 10 });
      larger.push(c.accountId);
      assert.equal((await h.request('POST', '/v1/sms/bulk', { key: c.key, body: { from: 'Acme', messages: [body(2 * i), body(2 * i + 1)] } })).statusCode, 200);
    }
    h.clock.advance(30_000);

    const metrics = (await h.request('GET', '/metrics')).body;
    const series = (name: string) => [...metrics.matchAll(new RegExp(`^${name}\\{account="([^"]+)"\\} (\\S+)$`, 'gm'))].map((m) => [m[1]!, Number(m[2])] as const);
    const depths = series('pigeon_account_dispatch_backlog');
    assert.equal(depths.length, 11, 'the 10 largest and the 10 oldest, one account in both lists');
    assert.deepEqual(depths.at(-1), [old.accountId, 1], 'the account with one old message, after the larger ones');
    assert.ok(depths.slice(0, 10).every(([account, depth]) => larger.includes(account) && depth === 2));
    const ages = new Map(series('pigeon_account_dispatch_oldest_age_seconds'));
    assert.equal(ages.get(old.accountId), 630);
    assert.equal(ages.get(depths[0]![0]), 30);
    assert.match(metrics, /# HELP pigeon_account_dispatch_backlog .*10 accounts with the most waiting and the 10 whose oldest message has waited longest \(at most 20 series\)/);

    const ops = await operatorClient(h);
    const page = (await ops.get('/operator/backlog')).body;
    assert.match(page, /101 messages wait for dispatch \(the limit is 10,000; the oldest waits for 11 min\)/);
    const rows = [...page.matchAll(/<tr><td data-label="Account">.*?<code>([^<]+)<\/code>.*?<td data-label="Waiting">([^<]*)<\/td><td data-label="Of its share">([^<]*)<\/td><td data-label="Oldest waits">([^<]*)<\/td><\/tr>/g)].map((m) => m.slice(1));
    assert.equal(rows.length, 51, 'the 50 largest and the one waiting longest');
    assert.deepEqual(rows.at(-1), [old.accountId, '1', '0 %', '11 min']);
    assert.deepEqual(new Set(rows.slice(0, 50).map((r) => r[0])), new Set(larger));
    assert.ok(rows.slice(0, 50).every((r) => r[1] === '2' && r[3] === '30 s'), 'each larger one: 2 waiting, for 30 s');
  });
});
