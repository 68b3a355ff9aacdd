/**
 * The audit log through the real interfaces (DECISIONS.md §15): changes made in the dashboard, the
 * operator console and the API are recorded with their actor, action, target, address and
 * before/after values, secrets never; sends are not; `GET /v1/audit-events` filters and pages
 * them; the operator's roles are enforced on every console route from the one table, and a
 * refusal is recorded.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { harness, type Harness } from '../helpers/harness.ts';
import { DashboardClient, signedInOperator } from '../helpers/dashboard-client.ts';
import { OPERATOR_ROUTE_PERMISSIONS, routeKey } from '../../src/http/dashboard/operator-access.ts';
import { runPurge } from '../../src/services/retention/purge.ts';
import { recordAudit } from '../../src/services/audit/audit.ts';
import { routesServedBy } from '../../src/http/openapi.ts';
import { AUDIT_ACTIONS } from '../../src/domain/audit.ts';
import { readFileSync } from 'node:fs';

const PASSWORD = 'correct horse battery staple';

interface Event {
  id: string;
  at: string;
  account_id: string | null;
  actor: { type: string; id: string | null; email: string | null };
  action: string;
  target: { type: string; id: string } | null;
  ip: string | null;
  changes: Record<string, [unknown, unknown]>;
}

describe('audit log', () => {
  let h: Harness;
  let owner: DashboardClient;
  let accountId: string;
  let apiKey: string;
  let apiKeyId: string;

  async function events(key = apiKey, query = ''): Promise<Event[]> {
    const res = await h.request('GET', `/v1/audit-events?limit=200${query}`, { key });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().data as Event[];
  }

  before(async () => {
    h = await harness();
    owner = new DashboardClient(h.app);
    const form = await owner.get('/dashboard/signup');
    assert.equal((await owner.post('/dashboard/signup', { name: 'Audited Ltd', email: 'boss@example.com', password: PASSWORD }, form.body)).statusCode, 303);
    // A key made in the dashboard, as a person does.
    const keys = await owner.get('/dashboard/settings/api-keys');
    const nonce = /name="nonce" value="([^"]+)"/.exec(keys.body)![1]!;
    const made = await owner.post('/dashboard/settings/api-keys', { label: 'server', nonce, scopes: ['account:read', 'account:write', 'opt_outs:write', 'sms:send'] }, keys.body);
    assert.equal(made.statusCode, 200, made.body);
    apiKey = /pk_live_[A-Za-z0-9]{32}/.exec(made.body)![0];
    const listed = await h.request('GET', '/v1/audit-events', { key: apiKey });
    accountId = (listed.json().data as Event[])[0]!.account_id!;
    apiKeyId = (listed.json().data as Event[]).find((e) => e.action === 'api_key.created')!.target!.id;
  });
  after(() => h.close());

  test("a person's sign-up, sign-ins and key: actor, target, address, before and after", async () => {
    const wrong = new DashboardClient(h.app);
    const form = await wrong.get('/dashboard/login');
    assert.equal((await wrong.post('/dashboard/login', { email: 'boss@example.com', password: 'not the password' }, form.body)).statusCode, 401);
    assert.equal((await wrong.post('/dashboard/login', { email: 'boss@example.com', password: PASSWORD }, form.body)).statusCode, 303);

    const all = await events();
    const signup = all.find((e) => e.action === 'member.signed_up')!;
    assert.equal(signup.actor.type, 'member');
    assert.equal(signup.actor.email, 'boss@example.com');
    assert.equal(signup.ip, '127.0.0.1');
    assert.deepEqual(signup.changes.email, [null, 'boss@example.com']);

    const key = all.find((e) => e.action === 'api_key.created')!;
    assert.deepEqual(key.actor, { type: 'member', id: signup.actor.id, email: 'boss@example.com' });
    assert.deepEqual(key.target, { type: 'api_key', id: apiKeyId });
    assert.deepEqual(key.changes.label, [null, 'server']);
    assert.equal(key.ip, '127.0.0.1');
    assert.doesNotMatch(JSON.stringify(all), /pk_live_[A-Za-z0-9]{32}/, 'the key itself is never recorded');

    const [signedIn, failed] = [all.find((e) => e.action === 'member.signed_in')!, all.find((e) => e.action === 'member.sign_in_failed')!];
    assert.equal(signedIn.actor.email, 'boss@example.com');
    assert.deepEqual(failed.changes.reason, [null, 'invalid_credentials']);
    assert.ok(all.indexOf(signedIn) < all.indexOf(failed), 'newest first');
  });

  test('changes through the API are the key\'s; sends are not recorded', async () => {
    await h.request('PUT', '/v1/account/events-url', { key: apiKey, body: { url: 'https://hooks.example.com/events' } });
    await h.request('DELETE', '/v1/account/events-url', { key: apiKey });
    assert.equal((await h.request('POST', '/v1/opt-outs', { key: apiKey, body: { phone: '+447700900123' } })).statusCode, 201);
    const before = (await events()).length;
    await h.ctx.store.db.updateTable('accounts').set({ credits: 100 }).where('id', '=', accountId).execute();
    const sender = await h.customer();
    const beforeSend = (await events(sender.key)).length;
    const sent = await h.request('POST', '/v1/sms/send', { key: sender.key, body: { to: '+447700900456', from: 'Acme', message: 'Hello from the audit test' } });
    assert.equal(sent.statusCode, 200, sent.body);
    assert.equal((await events(sender.key)).length, beforeSend, 'a send is not a change');
    const all = await events();
    const set = all.find((e) => e.action === 'account.events_url_set')!;
    assert.deepEqual(set.actor, { type: 'api_key', id: apiKeyId, email: null });
    assert.deepEqual(set.changes.events_url, [null, 'https://hooks.example.com/events']);
    assert.deepEqual(all.find((e) => e.action === 'account.events_url_removed')!.changes.events_url, ['https://hooks.example.com/events', null]);
    assert.deepEqual(all.find((e) => e.action === 'opt_out.added')!.target, { type: 'opt_out', id: '+447700900123' });
    assert.equal(all.length, before);
  });

  test('a rotated webhook secret is recorded as a change, never with the secret', async () => {
    const page = await owner.get('/dashboard/settings/webhook');
    assert.equal((await owner.post('/dashboard/settings/webhook/rotate', {}, page.body)).statusCode, 200);
    const rotated = (await events(apiKey, '&action=account.webhook_secret_rotated'))[0]!;
    assert.deepEqual(rotated.changes.webhook_secret, ['[redacted]', '[redacted]']);
    const stored = await h.ctx.store.db.selectFrom('audit_events').select('changes').execute();
    assert.doesNotMatch(JSON.stringify(stored), /whsec_/);
  });

  test("the operator's changes are recorded with the operator, in the account's log too", async () => {
    const ops = await signedInOperator(h.app, h.ctx, 'admin@example.com');
    const accounts = await ops.get('/operator/accounts');
    assert.equal((await ops.post(`/operator/accounts/${accountId}/credits`, { amount: '250' }, accounts.body)).statusCode, 303);
    assert.equal((await ops.post(`/operator/accounts/${accountId}/suspend`, {}, accounts.body)).statusCode, 303);
    assert.equal((await ops.post(`/operator/accounts/${accountId}/resume`, {}, accounts.body)).statusCode, 303);
    const all = await events();
    const credits = all.find((e) => e.action === 'credits.added')!;
    assert.equal(credits.actor.type, 'operator');
    assert.equal(credits.actor.email, 'admin@example.com');
    assert.deepEqual(credits.changes.credits, [100, 350]);
    assert.deepEqual(all.find((e) => e.action === 'account.suspended')!.changes.status, ['active', 'suspended']);
    assert.deepEqual(all.find((e) => e.action === 'account.resumed')!.changes.status, ['suspended', 'active']);
    // The operator's view: every account's records, and theirs.
    const page = await ops.get('/operator/audit?action=credits.added');
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /credits\.added/);
    assert.match(page.body, /admin@example\.com/);
  });

  test('filters: action or resource, since, pages; bad ones are invalid_request', async () => {
    const keysOnly = await events(apiKey, '&action=api_key');
    assert.ok(keysOnly.length >= 1 && keysOnly.every((e) => e.action.startsWith('api_key.')));
    const later = await events(apiKey, `&since=${encodeURIComponent(new Date(h.clock.ms + 1000).toISOString())}`);
    assert.equal(later.length, 0);
    const page = await h.request('GET', '/v1/audit-events?limit=2&page=2', { key: apiKey });
    assert.equal(page.json().pagination.page, 2);
    assert.equal(page.json().data.length, 2);
    assert.ok(page.json().pagination.total > 4);
    for (const bad of ['action=api_key.exploded', 'since=yesterday', 'limit=201', 'page=0']) {
      const res = await h.request('GET', `/v1/audit-events?${bad}`, { key: apiKey });
      assert.equal(res.statusCode, 400, bad);
      assert.equal(res.json().code, 'invalid_request', bad);
    }
    const narrow = await h.customer({ scopes: 'sms:send' });
    assert.equal((await h.request('GET', '/v1/audit-events', { key: narrow.key })).statusCode, 403);
    // Another account sees none of this one's records.
    const other = await h.customer();
    assert.ok((await events(other.key)).every((e) => e.account_id === other.accountId));
  });

  test('the dashboard page lists the records and downloads them as CSV', async () => {
    const page = await owner.get('/dashboard/settings/audit?action=api_key');
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /api_key\.created/);
    const csv = await owner.get('/dashboard/settings/audit.csv');
    assert.equal(csv.statusCode, 200);
    assert.match(String(csv.headers['content-type']), /text\/csv/);
    assert.match(csv.body, /^id,at,account_id,actor_type/);
    assert.match(csv.body, /member\.signed_up/);
    const bad = await owner.get('/dashboard/settings/audit?since=never');
    assert.match(bad.body, /ISO 8601/);
  });

  test('records older than RETENTION_AUDIT_DAYS go with the retention purge', async () => {
    const other = await harness({ RETENTION_AUDIT_DAYS: '30' });
    try {
      await recordAudit(other.ctx, { action: 'route.added', accountId: null, target: { type: 'route', id: 'old' } });
      other.clock.advance(31 * 86_400_000);
      await recordAudit(other.ctx, { action: 'route.added', accountId: null, target: { type: 'route', id: 'new' } });
      const report = await runPurge(other.ctx);
      assert.equal(report.audit_events_deleted, 1);
      const left = await other.ctx.store.db.selectFrom('audit_events').select('target_id').execute();
      assert.deepEqual(left.map((r) => r.target_id), ['new']);
    } finally {
      await other.close();
    }
  });
});

test('docs/security.md lists every action recorded, and no other', () => {
  const doc = readFileSync(new URL('../../docs/security.md', import.meta.url), 'utf8');
  const table = doc.slice(doc.indexOf('### The actions recorded'), doc.indexOf('### Operator roles'));
  const listed = [...table.matchAll(/^\| `([a-z_.]+)` \|/gm)].map((m) => m[1]);
  assert.deepEqual(listed.sort(), Object.keys(AUDIT_ACTIONS).sort());
});

describe('operator roles', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  test('every /operator route has a declared requirement in the one table', async () => {
    const undeclared: string[] = [];
    const operatorRoutes = routesServedBy(h.app).filter((r) => r.url.startsWith('/operator'));
    assert.ok(operatorRoutes.length > 30, `${operatorRoutes.length} operator routes`);
    for (const route of operatorRoutes) {
      if (route.method === 'HEAD') continue;
      if (!(routeKey(route.method, route.url) in OPERATOR_ROUTE_PERMISSIONS)) undeclared.push(`${route.method} ${route.url}`);
    }
    assert.deepEqual(undeclared, []);
  });

  test('a support operator is refused a price import (403), and the refusal is recorded; finance may preview it', async () => {
    const support = await signedInOperator(h.app, h.ctx, 'support@example.com', 'support');
    const queue = await support.get('/operator/sender-ids');
    assert.equal(queue.statusCode, 200);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(queue.body)![1]!;
    const entriesBefore = await h.ctx.store.db.selectFrom('rate_card_entries').select('prefix').execute();
    const forged = await support.postMultipart('/operator/rate-cards/apply', { _csrf: csrf, card: 'default' }, [{ name: 'file', filename: 'prices.csv', type: 'text/csv', bytes: Buffer.from('prefix,price\n+44,5\n') }]);
    assert.equal(forged.statusCode, 403);
    assert.match(forged.body, /operator role does not allow/);
    const cards = await h.ctx.store.db.selectFrom('rate_card_entries').select('prefix').execute();
    assert.deepEqual(cards, entriesBefore);
    const refused = await h.ctx.store.db.selectFrom('audit_events').selectAll().where('action', '=', 'operator.access_denied').execute();
    assert.equal(refused.length, 1);
    assert.equal(refused[0]!.actor_email, 'support@example.com');
    assert.equal(refused[0]!.target_id, 'POST /operator/rate-cards/apply');
    assert.equal((await support.get('/operator/routes')).statusCode, 403);
    assert.equal((await support.get('/operator/margin')).statusCode, 403);

    const finance = await signedInOperator(h.app, h.ctx, 'finance@example.com', 'finance');
    assert.equal((await finance.get('/operator/margin')).statusCode, 200);
    assert.equal((await finance.get('/operator/sender-ids')).statusCode, 403);
    // The navigation offers only what the role opens.
    const margin = await finance.get('/operator/margin');
    assert.match(margin.body, /href="\/operator\/rate-cards"/);
    assert.doesNotMatch(margin.body, /href="\/operator\/routes"/);
    assert.doesNotMatch(margin.body, /href="\/operator\/sender-ids"/);
    const home = await finance.get('/operator/');
    assert.equal(home.headers.location, '/operator/accounts');
  });
});

