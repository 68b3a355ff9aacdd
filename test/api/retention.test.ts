/**
 * Retention and erasure (DECISIONS.md §13) through HTTP: the overview and the usage export show
 * the same figures before and after a purge of everything; the purge works in batches, per
 * account, never touches a message on its way; an erasure through the API redacts every stored
 * trace of a number (reports, events' payloads, stored idempotent responses, dashboard pages,
 * exports) while its opt-out keeps blocking sends.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { addCredits } from '../../src/services/accounts/accounts.ts';
import { createApiKey } from '../../src/services/keys/api-keys.ts';
import { assignNumber } from '../../src/services/numbers/numbers.ts';
import { approveSenderId, registerSenderId } from '../../src/services/sender-ids/sender-ids.ts';
import { runPurge } from '../../src/services/retention/purge.ts';
import { setAccountRetention } from '../../src/services/retention/account-retention.ts';
import { AppError } from '../../src/errors/catalogue.ts';
import { DashboardClient, signedInOperator } from '../helpers/dashboard-client.ts';
import { harness, type Harness } from '../helpers/harness.ts';

const CALLBACK = 'https://127.0.0.1:9/callback';
const DAY = 24 * 3_600_000;

describe('retention and erasure', () => {
  let h: Harness;
  before(async () => {
    h = await harness({ WEBHOOK_RETRY_DELAYS_MS: '0' });
  });
  after(() => h.close());

  /** An account signed up through the dashboard, ready to send, with its owner's browser. */
  async function owner(name: string): Promise<{ client: DashboardClient; accountId: string; key: string }> {
    const client = new DashboardClient(h.app);
    const email = `${name.toLowerCase()}@example.com`;
    const form = await client.get('/dashboard/signup');
    await client.post('/dashboard/signup', { name, email, password: 'correct horse battery' }, form.body);
    const row = await h.ctx.store.db.selectFrom('owners').selectAll().where('email', '=', email).executeTakeFirstOrThrow();
    await addCredits(h.ctx, row.account_id, 1000, 'top-up');
    await approveSenderId(h.ctx, (await registerSenderId(h.ctx, row.account_id, 'Acme')).id);
    const key = (await createApiKey(h.ctx, row.account_id, { label: 'k' })).key;
    return { client, accountId: row.account_id, key };
  }

  /** Lets dispatch and the simulator's receipts (1 s on the harness's clock) run. */
  async function settle(): Promise<void> {
    await h.workers.drain();
    h.clock.advance(1000);
    await h.workers.drain();
  }

  const count = async (table: 'messages' | 'webhook_events' | 'inbound_messages', accountId: string) =>
    Number((await h.ctx.store.db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).where('account_id', '=', accountId).executeTakeFirstOrThrow()).n);

  const chartData = (body: string) => JSON.parse(/<script type="application\/json" id="chart-data">(.*?)<\/script>/s.exec(body)?.[1] ?? `"${body.slice(0, 300)}"`);

  test('the overview, the usage page and its CSV show the same figures after a purge of everything; the ledger is untouched', async () => {
    const o = await owner('Totals');
    // Several destinations and outcomes: delivered, failed after it left (0000), rejected before (2222: refunded), canceled.
    const sends = [
      { to: '+447700900101', message: 'one' },
      { to: '+447700900102', message: 'two '.repeat(50) },
      { to: '+14155550103', message: 'three' },
      { to: '+33612340000', message: 'fails' },
      { to: '+447700902222', message: 'rejected' },
    ];
    const bulk = await h.request('POST', '/v1/sms/bulk', { key: o.key, body: { from: 'Acme', callback_url: CALLBACK, messages: sends } });
    assert.equal(bulk.statusCode, 200, bulk.body);
    const later = await h.request('POST', '/v1/sms/send', { key: o.key, body: { to: '+447700900104', from: 'Acme', message: 'later', send_at: new Date(h.clock.now() + 3_600_000).toISOString() } });
    assert.equal((await h.request('POST', `/v1/sms/${later.json().message_id}/cancel`, { key: o.key })).statusCode, 200);
    h.clock.advance(DAY); // a second day in the chart
    assert.equal((await h.request('POST', '/v1/sms/send', { key: o.key, body: { to: '+447700900105', from: 'Acme', message: 'next day', callback_url: CALLBACK } })).statusCode, 200);
    await settle();
    // A day later the session has ended: sign in again.
    const login = await o.client.get('/dashboard/login');
    assert.equal((await o.client.post('/dashboard/login', { email: 'totals@example.com', password: 'correct horse battery' }, login.body)).statusCode, 303);

    const overview = async () => chartData((await o.client.get('/dashboard')).body);
    const usagePage = async () => (await o.client.get('/dashboard/usage')).body.replace(/.*<main/s, '');
    const usageCsv = async () => (await o.client.get('/dashboard/usage.csv')).body;
    const ledger = async () => (await o.client.get('/dashboard/credits')).body.replace(/.*<main/s, '');
    const balance = async () => (await h.request('GET', '/v1/account/balance', { key: o.key })).json();
    const before = { overview: await overview(), page: await usagePage(), csv: await usageCsv(), ledger: await ledger(), balance: await balance() };
    const totalOf = (chart: { counts: Record<string, number[]> }) => Object.values(chart.counts).flat().reduce((a, b) => a + b, 0);
    assert.equal(totalOf(before.overview), 7);
    assert.ok(before.overview.counts.delivered.reduce((a: number, b: number) => a + b, 0) >= 3);
    assert.match(before.csv, /^month,calling_code,status,messages,segments,credits\r\n/);
    assert.match(before.csv, /2026-03,44,delivered,\d+,\d+,\d+/);
    assert.match(before.csv, /2026-03,1,delivered,1,1,1/);
    assert.match(before.csv, /2026-03,44,canceled,1,1,0\r\n/, 'a canceled message keeps no credits');
    assert.match(before.csv, /,44,failed,1,1,0\r\n/, 'refused before it left: refunded');
    assert.match(before.csv, /,33,failed,1,1,1\r\n/, 'failed after it left: charged');
    assert.ok((await count('messages', o.accountId)) === 7 && (await count('webhook_events', o.accountId)) > 0);

    await setAccountRetention(h.ctx, o.accountId, { messageDays: 0 });
    const report = await runPurge(h.ctx, { batchSize: 2 });
    assert.ok(report.messages_deleted >= 7, JSON.stringify(report));
    assert.ok(report.batches >= 4, `in batches of 2: ${report.batches}`);
    assert.equal(await count('messages', o.accountId), 0);
    assert.equal(await count('webhook_events', o.accountId), 0);

    assert.deepEqual(await overview(), before.overview);
    assert.equal(await usagePage(), before.page);
    assert.equal(await usageCsv(), before.csv);
    assert.equal(await ledger(), before.ledger);
    assert.deepEqual(await balance(), before.balance);
    const ledgerRows = await h.ctx.store.db.selectFrom('credit_ledger').select(['reference', 'note']).where('account_id', '=', o.accountId).execute();
    // Ids (msg_, bat_) are random base-32 and may hold seven digits in a row or a word: left out of the check.
    for (const r of ledgerRows) {
      assert.doesNotMatch(`${r.reference} ${r.note}`.replace(/\b[a-z]{3}_[0-9a-z]+/g, 'id'), /\+?\d{7,}|one|fails/, 'the ledger holds no number or text');
    }

    // A second purge finds nothing and counts nothing twice; new messages add to the totals.
    const again = await runPurge(h.ctx, { batchSize: 2 });
    assert.equal(again.messages_deleted, 0);
    assert.deepEqual(await overview(), before.overview);
    assert.equal((await h.request('POST', '/v1/sms/send', { key: o.key, body: { to: '+447700900106', from: 'Acme', message: 'after' } })).statusCode, 200);
    await settle();
    assert.equal(totalOf(await overview()), 8);
    await runPurge(h.ctx);
    assert.equal(totalOf(await overview()), 8, 'counted once, live or purged');
  });

  test('per account: text removed after its body days, numbers masked after its mask days, the others untouched, a message on its way never', async () => {
    const short = await owner('Short');
    const normal = await owner('Normal');
    await assignNumber(h.ctx, short.accountId, '+447700900888');
    assert.equal((await h.request('PUT', '/v1/account/events-url', { key: short.key, body: { url: 'https://127.0.0.1:9/events' } })).statusCode, 200);
    const send = async (key: string, to: string, message: string, extra: Record<string, unknown> = {}) => {
      const res = await h.request('POST', '/v1/sms/send', { key, body: { to, from: 'Acme', message, callback_url: CALLBACK, ...extra } });
      assert.equal(res.statusCode, 200, res.body);
      return res.json().message_id as string;
    };
    const a = await send(short.key, '+447700900201', 'short secret');
    const b = await send(normal.key, '+447700900202', 'normal secret');
    const scheduled = await send(short.key, '+447700900203', 'not yet', { send_at: new Date(h.clock.now() + 2 * DAY).toISOString() });
    const sim = await h.request('POST', '/v1/simulator/inbound', { key: short.key, body: { from: '+447911000204', to: '+447700900888', message: 'inbound secret' } });
    assert.equal(sim.statusCode, 201, sim.body);
    await settle();

    await assert.rejects(setAccountRetention(h.ctx, short.accountId, { bodyDays: 31 }), (e: AppError) => e.code === 'invalid_request' && /longer than the installation/.test(e.message));
    await setAccountRetention(h.ctx, short.accountId, { bodyDays: 0, maskNumbersDays: 0 });
    const report = await runPurge(h.ctx);
    assert.ok(report.bodies_removed >= 1 && report.numbers_masked >= 1 && report.inbound_bodies_removed >= 1 && report.inbound_numbers_masked >= 1, JSON.stringify(report));
    const row = (id: string) => h.ctx.store.db.selectFrom('messages').select(['body', 'recipient', 'status']).where('id', '=', id).executeTakeFirstOrThrow();
    assert.deepEqual({ ...(await row(a)) }, { body: '', recipient: '+44770090XXXX', status: 'delivered' });
    assert.deepEqual({ ...(await row(b)) }, { body: 'normal secret', recipient: '+447700900202', status: 'delivered' }, 'another account keeps the default');
    assert.deepEqual({ ...(await row(scheduled)) }, { body: 'not yet', recipient: '+447700900203', status: 'scheduled' }, 'not final: untouched');
    const inbound = await h.ctx.store.db.selectFrom('inbound_messages').select(['body', 'sender']).where('id', '=', sim.json().data.id).executeTakeFirstOrThrow();
    assert.deepEqual({ ...inbound }, { body: '', sender: '+44791100XXXX' });
    const payloads = await h.ctx.store.db.selectFrom('webhook_events').select('payload').where('account_id', '=', short.accountId).execute();
    assert.ok(payloads.length >= 2);
    for (const p of payloads) assert.doesNotMatch(p.payload, /900201|000204|inbound secret/);

    // The owner sees the settings; the message page says why the text is gone.
    const settings = await short.client.get('/dashboard/settings/privacy');
    assert.match(settings.body, /id="retention-body">removed at the next purge</);
    assert.match(settings.body, /id="retention-messages">400 days</);
    assert.match((await normal.client.get('/dashboard/settings/privacy')).body, /id="retention-body">30 days<\/span><\/td><td data-label="Set by">this server&#39;s default/);
    assert.match((await short.client.get(`/dashboard/messages/${a}`)).body, /redacted|removed/i);

    // Once the scheduled message is final (canceled), the next purge catches up with it.
    assert.equal((await h.request('POST', `/v1/sms/${scheduled}/cancel`, { key: short.key })).statusCode, 200);
    await runPurge(h.ctx);
    assert.deepEqual({ ...(await row(scheduled)) }, { body: '', recipient: '+44770090XXXX', status: 'canceled' });
  });

  test('the operator console shows and shortens an account’s retention, refusing longer than the installation', async () => {
    const o = await owner('Console');
    const ops = await signedInOperator(h.app, h.ctx);
    const page = await ops.get(`/operator/accounts/${o.accountId}/limits`);
    assert.match(page.body, /id="body-days-now">30 days</);
    const saved = await ops.post(`/operator/accounts/${o.accountId}/retention`, { body_days: '7', message_days: '', mask_numbers_days: '90' }, page.body);
    assert.equal(saved.statusCode, 303, saved.body);
    const after = await ops.get(`/operator/accounts/${o.accountId}/limits`);
    assert.match(after.body, /id="body-days-now">7 days</);
    assert.match(after.body, /id="mask-days-now">90 days</);
    assert.match((await o.client.get('/dashboard/settings/privacy')).body, /id="retention-body">7 days<\/span><\/td><td data-label="Set by">set for this account by the operator/);
    const refused = await ops.post(`/operator/accounts/${o.accountId}/retention`, { body_days: '31', message_days: '', mask_numbers_days: '' }, page.body);
    assert.equal(refused.statusCode, 400);
    assert.match(refused.body, /longer than the installation/);
    assert.match((await ops.get('/operator/erasures')).body, /Erasures/);
  });

  test('an erasure through the API: every stored trace of the number redacted within a run of the workers, the opt-out still blocks', async () => {
    const o = await owner('Erase');
    const other = await owner('Bystander');
    const phone = '+447700900555';
    await assignNumber(h.ctx, o.accountId, '+447700900999');
    assert.equal((await h.request('PUT', '/v1/account/events-url', { key: o.key, body: { url: 'https://127.0.0.1:9/events' } })).statusCode, 200);
    const first = await h.request('POST', '/v1/sms/send', { key: o.key, headers: { 'idempotency-key': 'erase-1' }, body: { to: phone, from: 'Acme', message: 'erase secret one', callback_url: CALLBACK } });
    assert.equal(first.statusCode, 200, first.body);
    const bulk = await h.request('POST', '/v1/sms/bulk', { key: o.key, body: { from: 'Acme', callback_url: CALLBACK, messages: [{ to: phone, message: 'erase secret two' }, { to: '+447700900556', message: 'keep me' }] } });
    assert.equal(bulk.statusCode, 200, bulk.body);
    const theirs = await h.request('POST', '/v1/sms/send', { key: other.key, body: { to: phone, from: 'Acme', message: 'another account', callback_url: CALLBACK } });
    assert.equal((await h.request('POST', '/v1/simulator/inbound', { key: o.key, body: { from: phone, to: '+447700900999', message: 'erase secret three' } })).statusCode, 201);
    assert.equal((await h.request('POST', '/v1/opt-outs', { key: o.key, body: { phone } })).statusCode, 201);
    await settle();
    const csvBefore = (await o.client.get('/dashboard/usage.csv')).body;

    const bad = await h.request('POST', '/v1/privacy/erasures', { key: o.key, body: { phone: 'not a number' } });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().code, 'invalid_number');
    const readOnly = (await h.customer({ scopes: 'reports:read' })).key;
    assert.equal((await h.request('POST', '/v1/privacy/erasures', { key: readOnly, body: { phone } })).statusCode, 403);

    const res = await h.request('POST', '/v1/privacy/erasures', { key: o.key, body: { phone } });
    assert.equal(res.statusCode, 202, res.body);
    const data = res.json().data;
    assert.equal(res.json().status, 'success');
    assert.match(data.id, /^era_/);
    assert.equal(data.status, 'pending');
    assert.equal(data.phone, '+44770090XXXX');
    await h.workers.drain();
    const status = await h.request('GET', `/v1/privacy/erasures/${data.id}`, { key: o.key });
    assert.equal(status.statusCode, 200, status.body);
    assert.equal(status.json().data.status, 'done');
    assert.equal(status.json().data.counts.messages, 2);
    assert.equal(status.json().data.counts.inbound_messages, 1);
    assert.ok(status.json().data.counts.events >= 4, JSON.stringify(status.json().data.counts));
    assert.equal(status.json().data.counts.idempotent_responses, 1);
    assert.equal((await h.request('GET', `/v1/privacy/erasures/${data.id}`, { key: other.key })).statusCode, 404, 'another account’s erasure');

    const leaks = /900555|erase secret/;
    const reports = (await h.request('GET', '/v1/sms/delivery-reports?limit=100', { key: o.key })).body;
    assert.doesNotMatch(reports, leaks);
    assert.match(reports, /\+44770090XXXX/);
    assert.match(reports, /\+447700900556/, 'other numbers stay');
    assert.doesNotMatch((await h.request('GET', '/v1/webhooks/events?limit=100', { key: o.key })).body, leaks);
    assert.doesNotMatch((await h.request('GET', '/v1/sms/inbound', { key: o.key })).body, leaks);
    const stored = await h.ctx.store.db.selectFrom('webhook_events').select('payload').where('account_id', '=', o.accountId).execute();
    for (const e of stored) assert.doesNotMatch(e.payload, leaks);
    const responses = await h.ctx.store.db.selectFrom('idempotency_keys').select('response_body').where('account_id', '=', o.accountId).execute();
    for (const r of responses) assert.doesNotMatch(String(r.response_body), leaks);
    const replay = await h.request('POST', '/v1/sms/send', { key: o.key, headers: { 'idempotency-key': 'erase-1' }, body: { to: phone, from: 'Acme', message: 'erase secret one', callback_url: CALLBACK } });
    assert.doesNotMatch(replay.body, /900555/, 'the replayed answer is the redacted one');
    for (const url of ['/dashboard/messages', `/dashboard/messages/${first.json().message_id}`, '/dashboard/inbox', '/dashboard/usage', '/dashboard/usage.csv']) {
      assert.doesNotMatch((await o.client.get(url)).body, leaks, url);
    }
    assert.equal((await o.client.get('/dashboard/usage.csv')).body, csvBefore, 'usage counts stay');
    // The other account's message to the number is not this account's to erase.
    assert.equal((await h.ctx.store.db.selectFrom('messages').select('recipient').where('id', '=', theirs.json().message_id).executeTakeFirstOrThrow()).recipient, phone);
    // The opt-out keeps the number and still blocks.
    const blocked = await h.request('POST', '/v1/sms/send', { key: o.key, body: { to: phone, from: 'Acme', message: 'hello again' } });
    assert.equal(blocked.statusCode, 400);
    assert.equal(blocked.json().code, 'recipient_opted_out');
  });

  test('the inbox has a Redact button for a received message', async () => {
    const o = await owner('Inbox');
    await assignNumber(h.ctx, o.accountId, '+447700900777');
    const sim = await h.request('POST', '/v1/simulator/inbound', { key: o.key, body: { from: '+447911123499', to: '+447700900777', message: 'redact me' } });
    const id = sim.json().data.id as string;
    const page = await o.client.get('/dashboard/inbox/%2B447911123499');
    assert.match(page.body, new RegExp(`action="/dashboard/inbox/%2B447911123499/${id}/redact"`));
    const done = await o.client.post(`/dashboard/inbox/%2B447911123499/${id}/redact`, {}, page.body);
    assert.equal(done.statusCode, 303, done.body);
    const row = await h.ctx.store.db.selectFrom('inbound_messages').select(['body', 'sender']).where('id', '=', id).executeTakeFirstOrThrow();
    assert.deepEqual({ ...row }, { body: '', sender: '+44791112XXXX' });
    assert.doesNotMatch((await o.client.get('/dashboard/inbox')).body, /123499|redact me/);
  });
});
