/**
 * The owner's read-mostly pages: overview numbers, Messages (filters, paging, detail with webhook
 * attempts), Credits, and the webhook signing secret (reveal, rotate).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { harness, type Harness } from '../helpers/harness.ts';
import { DashboardClient } from '../helpers/dashboard-client.ts';
import { addCredits, getAccount } from '../../src/services/accounts/accounts.ts';
import { createApiKey } from '../../src/services/keys/api-keys.ts';
import { approveSenderId, registerSenderId } from '../../src/services/sender-ids/sender-ids.ts';

describe('dashboard: owner pages', () => {
  let h: Harness;
  let client: DashboardClient;
  let accountId: string;
  let key: string;
  const ids: string[] = [];

  before(async () => {
    h = await harness();
    client = new DashboardClient(h.app);
    const form = await client.get('/dashboard/signup');
    await client.post('/dashboard/signup', { name: 'Pages Ltd', email: 'pages@example.com', password: 'correct horse battery' }, form.body);
    const owner = await h.ctx.store.db.selectFrom('owners').selectAll().executeTakeFirstOrThrow();
    accountId = owner.account_id;
    await addCredits(h.ctx, accountId, 100, 'first top-up');
    await approveSenderId(h.ctx, (await registerSenderId(h.ctx, accountId, 'Pages')).id);
    key = (await createApiKey(h.ctx, accountId, { label: 'k' })).key;
    for (let i = 0; i < 30; i++) {
      const res = await h.request('POST', '/v1/sms/send', { key, body: { to: '+14155550100', from: 'Pages', message: `n${i}` } });
      assert.equal(res.statusCode, 200, res.body);
      ids.push(res.json().message_id);
    }
    // Half of them are dispatched and delivered; the simulator's `…1111` numbers would fail.
    await h.workers.drain();
    h.clock.advance(2000);
    await h.workers.drain();
  });
  after(() => h.close());

  test('overview: balance, delivery rate and the chart data', async () => {
    const res = await client.get('/dashboard');
    assert.equal(res.statusCode, 200);
    assert.match(res.body, /id="balance">70</);
    assert.match(res.body, /id="delivery-rate">100\.0 %</);
    const json = /<script type="application\/json" id="chart-data">([^<]*)<\/script>/.exec(res.body)![1]!;
    const stats = JSON.parse(json);
    assert.equal(stats.days.length, 30);
    assert.equal(stats.counts.delivered.at(-1), 30);
    assert.equal(stats.counts.delivered.slice(0, -1).reduce((a: number, b: number) => a + b, 0), 0);
  });

  test('messages: paginated, filtered like the API, with a detail page showing webhook attempts', async () => {
    const first = await client.get('/dashboard/messages');
    assert.match(first.body, /Delivery reports \(30\)/);
    assert.match(first.body, /Page 1 of 2/);
    assert.ok(first.body.includes(ids.at(-1)!), 'newest first');
    assert.ok(!first.body.includes(ids[0]!));
    const second = await client.get('/dashboard/messages?page=2');
    assert.ok(second.body.includes(ids[0]!));
    const one = await client.get(`/dashboard/messages?message_id=${ids[3]}`);
    assert.match(one.body, /Delivery reports \(1\)/);
    const none = await client.get('/dashboard/messages?status=failed');
    assert.match(none.body, /No messages match/);
    assert.match(none.body, /<option value="failed" selected>/);

    const now = h.clock.ms;
    await h.ctx.store.db
      .insertInto('webhook_events')
      .values({ id: 'evt_test', account_id: accountId, message_id: ids[3]!, batch_id: null, event: 'sms.delivered', url: 'https://hooks.example.com/in', payload: '{}', status: 'pending', attempts: 1, last_error: 'HTTP 503', created_at: now, updated_at: now })
      .execute();
    await h.ctx.store.db.insertInto('webhook_attempts').values({ id: 'wa_test', event_id: 'evt_test', attempt: 1, attempted_at: now, http_status: 503, error: 'HTTP 503', latency_ms: 42 }).execute();
    const detail = await client.get(`/dashboard/messages/${ids[3]}`);
    assert.equal(detail.statusCode, 200);
    assert.match(detail.body, /badge-delivered/);
    assert.match(detail.body, /hooks\.example\.com/);
    assert.match(detail.body, /42 ms/);
    assert.match(detail.body, /id="message-credits">1</, 'the credits it was charged at the default card\'s price');

    const other = new DashboardClient(h.app);
    const form = await other.get('/dashboard/signup');
    await other.post('/dashboard/signup', { name: 'Other', email: 'other@example.com', password: 'correct horse battery' }, form.body);
    assert.equal((await other.get(`/dashboard/messages/${ids[3]}`)).statusCode, 404, "another account's message is not found");
    assert.match((await other.get(`/dashboard/messages?message_id=${ids[3]}`)).body, /No messages match/);
  });

  test('credits: balance and ledger', async () => {
    const res = await client.get('/dashboard/credits');
    assert.match(res.body, /id="credits-balance">70</);
    assert.ok(res.body.includes('>-1<'), 'debits, newest first');
    assert.ok(res.body.includes('rel="next">Older'), 'more than one page of ledger rows');
    const older = await client.get('/dashboard/credits?page=2');
    assert.ok(older.body.includes('first top-up') && older.body.includes('+100'), 'the top-up is on the older page');
  });

  test('webhook secret: hidden until revealed, rotated with a 24-hour overlap', async () => {
    const before = await getAccount(h.ctx, accountId);
    const hidden = await client.get('/dashboard/settings/webhook');
    assert.ok(!hidden.body.includes(before.webhook_secret));
    const revealed = await client.post('/dashboard/settings/webhook/reveal', {}, hidden.body);
    assert.ok(revealed.body.includes(before.webhook_secret));
    assert.equal(revealed.headers['cache-control'], 'no-store');
    const rotated = await client.post('/dashboard/settings/webhook/rotate', {}, hidden.body);
    const after = await getAccount(h.ctx, accountId);
    assert.notEqual(after.webhook_secret, before.webhook_secret);
    assert.equal(after.webhook_secret_previous, before.webhook_secret);
    assert.ok(rotated.body.includes(after.webhook_secret));
    assert.match(rotated.body, /previous secret keeps signing/);
  });

  test('pages carry security headers and assets are served from the vendored packages', async () => {
    const res = await client.get('/dashboard');
    assert.match(String(res.headers['content-security-policy']), /default-src 'self'/);
    assert.equal(res.headers['x-frame-options'], 'DENY');
    for (const asset of ['htmx.min.js', 'uPlot.iife.min.js', 'uPlot.min.css', 'app.js', 'app.css']) {
      const a = await client.get(`/dashboard/assets/${asset}`);
      assert.equal(a.statusCode, 200, asset);
      assert.ok(a.body.length > 100, asset);
    }
    assert.equal((await client.get('/dashboard/assets/..%2F..%2Fpackage.json')).statusCode, 404);
  });
});
