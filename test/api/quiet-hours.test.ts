/**
 * Quiet hours (DECISIONS.md §16) through the HTTP interface, at chosen instants of the harness's
 * clock: the account's window, marketing messages held outside it (accepted and charged, pending,
 * `held_until` in the result and the report), released over its first half hour, the validity
 * period honoured, transactional traffic never held, and a property at the dispatch level: no
 * marketing message is handed to the carrier outside its recipient's window.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { harness, type Harness } from '../helpers/harness.ts';
import type { OutboundMessage } from '../../src/carriers/carrier.ts';
import { DEFAULT_WINDOW, RELEASE_SPREAD_MS, insideWindow } from '../../src/domain/quiet-hours.ts';
import { zonesOfNumber } from '../../src/domain/time-zones.ts';
import { OPENAPI_PATH } from '../../src/http/openapi.ts';
import { DashboardClient } from '../helpers/dashboard-client.ts';
import { createApiKey } from '../../src/services/keys/api-keys.ts';
import { dispatchBacklog } from '../../src/store/repositories/jobs.repository.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
/** 23:00 in New York (EDT) on 9 June 2026. */
const NY_23H = Date.parse('2026-06-10T03:00:00Z');
/** 08:00 there the next morning. */
const NY_08H = Date.parse('2026-06-10T12:00:00Z');

describe('quiet hours', () => {
  let h: Harness;
  /** Every message handed to the carrier, with the clock's time then. */
  const handed: { message: OutboundMessage; at: number }[] = [];
  before(async () => {
    h = await harness();
    const submit = h.carrier.submit.bind(h.carrier);
    h.carrier.submit = async (messages) => {
      for (const message of messages) handed.push({ message, at: h.clock.now() });
      return submit(messages);
    };
  });
  after(() => h.close());

  const handedIds = () => new Set(handed.map((x) => x.message.id));
  async function report(key: string, query: string) {
    return (await h.request('GET', `/v1/sms/delivery-reports?${query}`, { key })).json().data;
  }
  async function dispatchRunAt(messageId: string): Promise<number | undefined> {
    const job = await h.ctx.store.db.selectFrom('jobs').select('run_at').where('queue', '=', 'dispatch').where('ref', '=', messageId).executeTakeFirst();
    return job === undefined ? undefined : Number(job.run_at);
  }

  test('the window: 08:00-20:00 by default, set within 08:00-21:00, bad ones refused', async () => {
    const { key } = await h.customer();
    assert.deepEqual((await h.request('GET', '/v1/account/quiet-hours', { key })).json(), { status: 'success', data: { start: '08:00', end: '20:00' } });
    const set = await h.request('PUT', '/v1/account/quiet-hours', { key, body: { start: '09:00', end: '21:00' } });
    assert.equal(set.statusCode, 200);
    assert.deepEqual(set.json().data, { start: '09:00', end: '21:00' });
    assert.deepEqual((await h.request('GET', '/v1/account/quiet-hours', { key })).json().data, { start: '09:00', end: '21:00' });
    for (const body of [{ start: '07:59', end: '20:00' }, { start: '08:00', end: '21:30' }, { start: '8:00', end: '20:00' }, { start: '08:00', end: '24:00' }, { start: '20:00', end: '08:00' }, { start: '08:00' }, { start: 8, end: 20 }]) {
      const res = await h.request('PUT', '/v1/account/quiet-hours', { key, body });
      assert.equal(res.statusCode, 400, JSON.stringify(body));
      assert.equal(res.json().code, 'invalid_request');
    }
    assert.deepEqual((await h.request('GET', '/v1/account/quiet-hours', { key })).json().data, { start: '09:00', end: '21:00' }, 'a refused change leaves the window');
    const narrow = await h.customer({ scopes: 'sms:send,account:read' });
    assert.equal((await h.request('PUT', '/v1/account/quiet-hours', { key: narrow.key, body: { start: '09:00', end: '20:00' } })).statusCode, 403, 'account:write is needed');
  });

  test('a marketing send at 23:00 in New York is charged, pending, held until 08:00 there and released in its first half hour', async () => {
    h.clock.ms = NY_23H;
    const { key } = await h.customer({ credits: 10 });
    const res = await h.request('POST', '/v1/sms/send', { key, body: { to: '+12125550100', from: 'Acme', message: 'Sale today', category: 'marketing' } });
    assert.equal(res.statusCode, 200);
    const sent = res.json();
    assert.equal(sent.held_until, new Date(NY_08H).toISOString());
    assert.equal(sent.credits_remaining, 9, 'charged as usual');
    const plain = (await h.request('POST', '/v1/sms/send', { key, body: { to: '+12125550101', from: 'Acme', message: 'Your code is 1234' } })).json();
    assert.equal(plain.held_until, undefined, 'a transactional result says nothing of holds');
    let [row] = await report(key, `message_id=${sent.message_id}`);
    assert.equal(row.status, 'pending');
    assert.equal(row.held_until, new Date(NY_08H).toISOString());
    assert.equal((await report(key, `message_id=${plain.message_id}`))[0].held_until, null);
    const runAt = (await dispatchRunAt(sent.message_id))!;
    assert.ok(runAt >= NY_08H && runAt < NY_08H + RELEASE_SPREAD_MS, new Date(runAt).toISOString());

    await h.workers.drain();
    assert.ok(handedIds().has(plain.message_id), 'transactional messages are never held');
    assert.ok(!handedIds().has(sent.message_id));
    h.clock.ms = NY_08H - 1;
    await h.workers.drain();
    assert.ok(!handedIds().has(sent.message_id), 'not a moment before 08:00');
    h.clock.ms = NY_08H + RELEASE_SPREAD_MS;
    await h.workers.drain();
    assert.ok(handedIds().has(sent.message_id));
    [row] = await report(key, `message_id=${sent.message_id}`);
    assert.notEqual(row.status, 'pending');
  });

  test('a batch composed at 23:00 in New York hands no New York recipient to the carrier before 08:00 there, then all of them, spread', async () => {
    h.clock.ms = NY_23H;
    const { key, accountId } = await h.customer({ credits: 100 });
    const to = Array.from({ length: 12 }, (_, i) => `+1212555${String(1000 + i)}`);
    const res = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', category: 'marketing', messages: to.map((t) => ({ to: t, message: 'Sale today' })) } });
    assert.equal(res.statusCode, 200);
    const bulk = res.json();
    assert.equal(bulk.queued, 12);
    assert.ok(bulk.messages.every((m: { held_until: string }) => m.held_until === new Date(NY_08H).toISOString()));
    const ids = new Set<string>(bulk.messages.map((m: { message_id: string }) => m.message_id));
    const backlog = async () => (await dispatchBacklog(h.ctx.store.db, h.clock.now(), h.clock.now(), accountId)).depth;
    assert.equal(await backlog(), 0, 'held messages do not fill the dispatch backlog overnight');
    for (const step of [HOUR, 4 * HOUR, 8 * HOUR - 1]) {
      h.clock.ms = NY_23H + step;
      await h.workers.drain();
      assert.equal(handed.filter((x) => ids.has(x.message.id)).length, 0, `nothing by ${new Date(h.clock.ms).toISOString()}`);
    }
    const runAts = await Promise.all([...ids].map((id) => dispatchRunAt(id)));
    assert.ok(new Set(runAts).size > 1, 'released spread, not in one burst');
    h.clock.ms = NY_08H + RELEASE_SPREAD_MS;
    await h.workers.drain();
    const out = handed.filter((x) => ids.has(x.message.id));
    assert.equal(new Set(out.map((x) => x.message.id)).size, 12, 'all of them after the opening');
    assert.ok(out.every((x) => x.at >= NY_08H));
  });

  test('a held message whose validity period ends before the opening fails expired and is refunded', async () => {
    h.clock.ms = NY_23H;
    const { key } = await h.customer({ credits: 10 });
    const sent = (await h.request('POST', '/v1/sms/send', { key, body: { to: '+12125550199', from: 'Acme', message: 'Sale', category: 'marketing', validity_period: 3600 } })).json();
    assert.equal(sent.credits_remaining, 9);
    h.clock.ms = NY_08H + RELEASE_SPREAD_MS;
    await h.workers.drain();
    const [row] = await report(key, `message_id=${sent.message_id}`);
    assert.equal(row.status, 'failed');
    assert.equal(row.error_code, 'expired');
    assert.ok(!handedIds().has(sent.message_id));
    assert.equal((await h.request('GET', '/v1/account', { key })).json().data.credits_remaining, 10, 'refunded');
  });

  test('the quote of a marketing message says held_until when quiet hours would hold it, at the time it would go; as the send then does', async () => {
    h.clock.ms = NY_23H;
    const { key } = await h.customer({ credits: 10 });
    const quote = async (body: Record<string, unknown>) => {
      const res = await h.request('POST', '/v1/sms/quote', { key, body: { from: 'Acme', message: 'Sale today', ...body } });
      assert.equal(res.statusCode, 200, res.body);
      return res.json().data;
    };
    const marketing = await quote({ to: '+12125550170', category: 'marketing' });
    assert.deepEqual(marketing, { segments: 1, encoding: 'GSM-7', credits_per_segment: 1, credits: 1, held_until: new Date(NY_08H).toISOString() });
    assert.equal(Object.hasOwn(await quote({ to: '+12125550170' }), 'held_until'), false, 'a transactional quote says nothing of holds');
    assert.equal(Object.hasOwn(await quote({ to: '+12125550170', category: 'transactional' }), 'held_until'), false);
    // 04:00 in London: held until 08:00 there (07:00 UTC, summer time).
    assert.equal((await quote({ to: '+447400123401', category: 'marketing' })).held_until, '2026-06-10T07:00:00.000Z');
    // Scheduled for noon in New York: it would go inside the window.
    assert.equal((await quote({ to: '+12125550170', category: 'marketing', send_at: new Date(NY_08H + 4 * HOUR).toISOString() })).held_until, null);
    // Scheduled for 21:00 there the next evening: held until 08:00 the day after.
    assert.equal((await quote({ to: '+12125550170', category: 'marketing', send_at: new Date(NY_08H + 13 * HOUR).toISOString() })).held_until, new Date(NY_08H + 24 * HOUR).toISOString());
    // The account's own window counts; the send agrees with the quote.
    await h.request('PUT', '/v1/account/quiet-hours', { key, body: { start: '09:00', end: '20:00' } });
    const nine = new Date(NY_08H + HOUR).toISOString();
    assert.equal((await quote({ to: '+12125550170', category: 'marketing' })).held_until, nine);
    const sent = (await h.request('POST', '/v1/sms/send', { key, body: { to: '+12125550170', from: 'Acme', message: 'Sale today', category: 'marketing' } })).json();
    assert.equal(sent.held_until, nine);
    h.clock.ms = NY_08H + 2 * HOUR;
    assert.equal((await quote({ to: '+12125550170', category: 'marketing' })).held_until, null, 'inside the window: not held');
  });

  test('a scheduled marketing message released at night waits for the window; the account\'s own window counts', async () => {
    h.clock.ms = NY_23H;
    const { key, accountId } = await h.customer({ credits: 10 });
    await h.request('PUT', '/v1/account/quiet-hours', { key, body: { start: '09:00', end: '20:00' } });
    const sendAt = NY_23H + 30 * MINUTE;
    const sent = (await h.request('POST', '/v1/sms/send', { key, body: { to: '+12125550142', from: 'Acme', message: 'Sale', category: 'marketing', send_at: new Date(sendAt).toISOString() } })).json();
    assert.equal(sent.held_until, null, 'its window is checked when it is released');
    h.clock.ms = sendAt;
    await h.workers.drain();
    await h.workers.drain();
    const [row] = await report(key, `message_id=${sent.message_id}`);
    assert.equal(row.status, 'pending');
    assert.equal((await dispatchBacklog(h.ctx.store.db, h.clock.now(), h.clock.now(), accountId)).depth, 0, 'out of the backlog until its release');
    const nine = NY_08H + HOUR;
    assert.equal(row.held_until, new Date(nine).toISOString(), "09:00, the account's opening");
    h.clock.ms = nine - 1;
    await h.workers.drain();
    assert.ok(!handedIds().has(sent.message_id));
    h.clock.ms = nine + RELEASE_SPREAD_MS;
    await h.workers.drain();
    assert.ok(handedIds().has(sent.message_id));
  });

  test('property: over random (number, instant) pairs, no marketing message is handed to the carrier outside its window', async () => {
    const { key } = await h.customer({ credits: 100_000 });
    const numbers = ['+12125550123', '+18085550123', '+16025550123', '+19285550123', '+18505550123', '+19075550123', '+14165550123', '+18765550123', '+447400123456', '+61412345678', '+919812345678'];
    const ids = new Set<string>();
    const start = handed.length;
    h.clock.ms = Date.parse('2026-03-01T00:00:00Z');
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...numbers), fc.integer({ min: 0, max: 30 * HOUR }), async (to, advance) => {
        h.clock.advance(advance);
        const res = await h.request('POST', '/v1/sms/send', { key, body: { to, from: 'Acme', message: 'Sale', category: 'marketing' } });
        assert.equal(res.statusCode, 200);
        ids.add(res.json().message_id);
        await h.workers.drain();
      }),
      { numRuns: 60 },
    );
    // Two days on, hour by hour: a message due while its window is closed at that hour waits again.
    for (let i = 0; i < 48; i++) {
      h.clock.advance(HOUR);
      await h.workers.drain();
    }
    const ours = handed.slice(start).filter((x) => ids.has(x.message.id));
    assert.equal(new Set(ours.map((x) => x.message.id)).size, ids.size, 'every one goes out in the end');
    for (const { message, at } of ours) {
      assert.ok(insideWindow(at, zonesOfNumber(message.recipient), DEFAULT_WINDOW), `${message.recipient} at ${new Date(at).toISOString()}`);
    }
  });

  test('Settings → Quiet hours in the dashboard: shows the window, saves a narrower one (as the API sees it), refuses a wider one', async () => {
    const client = new DashboardClient(h.app);
    const form = await client.get('/dashboard/signup');
    assert.equal((await client.post('/dashboard/signup', { name: 'Quiet Ltd', email: 'quiet@example.com', password: 'correct horse battery' }, form.body)).statusCode, 303);
    const page = await client.get('/dashboard/settings/quiet-hours');
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /<a href="\/dashboard\/settings\/quiet-hours" aria-current="page">Quiet hours<\/a>/);
    assert.match(page.body, /id="quiet-hours-current">Marketing messages reach a phone only between <strong>08:00<\/strong> and <strong>20:00<\/strong>/);
    const saved = await client.post('/dashboard/settings/quiet-hours', { start: '09:30', end: '21:00' }, page.body);
    assert.equal(saved.statusCode, 200, saved.body);
    assert.match(saved.body, /The quiet hours were saved/);
    assert.match(saved.body, /between <strong>09:30<\/strong> and <strong>21:00<\/strong>/);
    const row = await h.ctx.store.db.selectFrom('owners').select('account_id').where('email', '=', 'quiet@example.com').executeTakeFirstOrThrow();
    const { key } = await createApiKey(h.ctx, row.account_id, { label: 'check' });
    assert.deepEqual((await h.request('GET', '/v1/account/quiet-hours', { key })).json().data, { start: '09:30', end: '21:00' });
    const wider = await client.post('/dashboard/settings/quiet-hours', { start: '07:00', end: '21:00' }, page.body);
    assert.equal(wider.statusCode, 400);
    assert.match(wider.body, /within 08:00-21:00/);
    assert.match(wider.body, /value="07:00"/, 'what was typed stays in the form');
    assert.deepEqual((await h.request('GET', '/v1/account/quiet-hours', { key })).json().data, { start: '09:30', end: '21:00' }, 'unchanged');
    const audit = await h.ctx.store.db.selectFrom('audit_events').selectAll().where('account_id', '=', row.account_id).where('action', '=', 'account.quiet_hours_changed').execute();
    assert.equal(audit.length, 1, 'the change is in the audit log');
  });

  test('the OpenAPI document has the quiet-hours routes and held_until', async () => {
    const doc = (await h.request('GET', OPENAPI_PATH)).json();
    assert.ok(doc.paths['/v1/account/quiet-hours'].get && doc.paths['/v1/account/quiet-hours'].put);
    const reports = doc.paths['/v1/sms/delivery-reports'].get.responses['200'].content['application/json'].schema;
    assert.ok(reports.properties.data.items.properties.held_until);
    assert.ok(doc.paths['/v1/sms/send'].post.responses['200'].content['application/json'].schema.properties.held_until);
    assert.ok(doc.paths['/v1/sms/quote'].post.responses['200'].content['application/json'].schema.properties.data.properties.held_until);
  });
});
