/**
 * The account events URL and inbound messages through the API (DECISIONS.md §8): the simulator
 * delivers to an account's number, the message is listed by GET /v1/sms/inbound and its
 * sms.received event reaches a real HTTPS receiver, signed, with inbound_id in the events list.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';
import { createWorkers, type Workers } from '../../src/workers/workers.ts';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.ts';
import { getAccount } from '../../src/services/accounts/accounts.ts';
import { assignNumber, releaseNumber } from '../../src/services/numbers/numbers.ts';
import { listUnrouted, simulateInbound } from '../../src/services/inbound/inbound.ts';
import { verifyWebhookSignature } from '../../src/domain/webhook-signature.ts';
import { makeTestCa, startReceiver, type Receiver, type TestCa } from './webhooks-receiver.ts';

describe('account events URL and inbound messages', () => {
  let ca: TestCa;
  let receiver: Receiver;
  let h: Harness;
  let workers: Workers;
  let seq = 0;

  before(async () => {
    ca = makeTestCa();
    receiver = await startReceiver(ca, (path, seen) => (path.startsWith('/flaky') && seen < 1 ? { status: 500 } : { status: 200 }));
    h = await harness({ WEBHOOK_RETRY_DELAYS_MS: '0,300', WEBHOOK_TIMEOUT_MS: '2000', WEBHOOK_ALLOW_PRIVATE: 'true' });
    const dispatcher = new WebhookDispatcher({ timeoutMs: 2000, allowPrivate: true, ca: ca.ca, maxSocketsPerHost: 2 });
    workers = createWorkers(h.ctx, h.carrier, { webhook: { dispatcher, perHost: 2 } });
  });
  after(async () => {
    await workers.stop();
    await h.close();
    await receiver.close();
    ca.cleanup();
  });

  async function customerWithNumber(number: string, opts: { events?: string | null } = {}) {
    const c = await h.customer();
    await assignNumber(h.ctx, c.accountId, number);
    const url = opts.events === undefined ? receiver.url(`/ok/${++seq}`) : opts.events;
    if (url !== null) {
      const set = await h.request('PUT', '/v1/account/events-url', { key: c.key, body: { url } });
      assert.equal(set.statusCode, 200, set.body);
    }
    return { ...c, url };
  }

  test('PUT and DELETE /v1/account/events-url: https only, account:write scope', async () => {
    const { key } = await h.customer();
    for (const url of ['http://127.0.0.1/x', 'not a url', 'https://user:pw@127.0.0.1/x', `https://127.0.0.1/${'a'.repeat(2048)}`]) {
      const res = await h.request('PUT', '/v1/account/events-url', { key, body: { url } });
      assert.equal(res.statusCode, 400, url.slice(0, 40));
      assert.match(res.json().code, /^(invalid_events_url|invalid_request)$/);
    }
    assert.equal((await h.request('PUT', '/v1/account/events-url', { key, body: {} })).json().code, 'invalid_request');
    const ok = await h.request('PUT', '/v1/account/events-url', { key, body: { url: 'https://127.0.0.1:9/events' } });
    assert.deepEqual(ok.json(), { status: 'success', data: { url: 'https://127.0.0.1:9/events' } });
    const cleared = await h.request('DELETE', '/v1/account/events-url', { key });
    assert.equal(cleared.statusCode, 204);
    assert.equal(cleared.body, '');
    const readOnly = await h.customer({ scopes: 'account:read' });
    const refused = await h.request('PUT', '/v1/account/events-url', { key: readOnly.key, body: { url: 'https://127.0.0.1:9/events' } });
    assert.equal(refused.statusCode, 403);
    assert.equal(refused.json().code, 'insufficient_permissions');
  });

  test('a simulated inbound message is stored, listed, and its sms.received event delivered and signed', async () => {
    const c = await customerWithNumber('+447700900501');
    const res = await h.request('POST', '/v1/simulator/inbound', { key: c.key, body: { from: '+44 7911 123456', to: '+447700900501', message: 'Hello there' } });
    assert.equal(res.statusCode, 201, res.body);
    const inbound = res.json().data;
    assert.match(inbound.id, /^in_/);
    assert.deepEqual({ ...inbound, id: 'x' }, {
      id: 'x',
      from: '+447911123456',
      to: '+447700900501',
      message: 'Hello there',
      segments: 1,
      encoding: 'GSM-7',
      received_at: new Date(h.clock.ms).toISOString(),
    });
    const list = await h.request('GET', '/v1/sms/inbound', { key: c.key });
    assert.deepEqual(list.json(), { status: 'success', data: [inbound], pagination: { page: 1, limit: 50, total: 1 } });

    await workers.drain();
    const got = receiver.received.filter((r) => r.path === new URL(c.url!).pathname);
    assert.equal(got.length, 1);
    const body = JSON.parse(got[0]!.body);
    assert.deepEqual(body, { event: 'sms.received', timestamp: new Date(h.clock.ms).toISOString(), data: inbound });
    const secret = (await getAccount(h.ctx, c.accountId)).webhook_secret;
    assert.equal(verifyWebhookSignature(got[0]!.body, String(got[0]!.headers['x-pigeon-signature']), secret, { nowSeconds: Math.floor(h.clock.ms / 1000) }), true);

    const events = await h.request('GET', '/v1/webhooks/events', { key: c.key });
    const [event] = events.json().data;
    assert.equal(event.event, 'sms.received');
    assert.equal(event.message_id, null);
    assert.equal(event.inbound_id, inbound.id);
    assert.equal(event.status, 'delivered');
    assert.equal(got[0]!.headers['x-pigeon-event-id'], event.id);
  });

  test('an account event is retried like a delivery event', async () => {
    const c = await customerWithNumber('+447700900502', { events: null });
    const url = receiver.url(`/flaky/${++seq}`);
    await h.request('PUT', '/v1/account/events-url', { key: c.key, body: { url } });
    await h.request('POST', '/v1/simulator/inbound', { key: c.key, body: { from: '+447911123456', to: '+447700900502', message: 'retry me' } });
    await workers.drain();
    h.clock.advance(300);
    await workers.drain();
    const hits = receiver.received.filter((r) => r.path === new URL(url).pathname);
    assert.equal(hits.length, 2);
    assert.equal(hits[0]!.body, hits[1]!.body);
    assert.equal(hits[0]!.headers['x-pigeon-event-id'], hits[1]!.headers['x-pigeon-event-id']);
    const [event] = (await h.request('GET', '/v1/webhooks/events', { key: c.key })).json().data;
    assert.equal(event.status, 'delivered');
    assert.equal(event.attempt_count, 2);
  });

  test('without an events URL the message is still stored; no event', async () => {
    const c = await customerWithNumber('+447700900503', { events: null });
    const res = await h.request('POST', '/v1/simulator/inbound', { key: c.key, body: { from: '+447911123456', to: '+447700900503', message: 'quiet' } });
    assert.equal(res.statusCode, 201);
    assert.equal((await h.request('GET', '/v1/sms/inbound', { key: c.key })).json().pagination.total, 1);
    assert.equal((await h.request('GET', '/v1/webhooks/events', { key: c.key })).json().pagination.total, 0);
  });

  test('the simulator endpoint: own numbers only (404), checked fields, scope sms:send', async () => {
    const c = await customerWithNumber('+447700900504', { events: null });
    const other = await customerWithNumber('+447700900505', { events: null });
    const post = (key: string, body: unknown) => h.request('POST', '/v1/simulator/inbound', { key, body });
    const notMine = await post(c.key, { from: '+447911123456', to: '+447700900505', message: 'x' });
    assert.equal(notMine.statusCode, 404);
    assert.equal(notMine.json().code, 'not_found');
    assert.equal((await post(c.key, { from: '+447911123456', to: '+447700900599', message: 'x' })).json().code, 'not_found');
    assert.equal((await post(c.key, { from: 'nobody', to: '+447700900504', message: 'x' })).json().code, 'invalid_recipient');
    assert.equal((await post(c.key, { from: '+447911123456', to: '+447700900504', message: '' })).json().code, 'invalid_message');
    assert.equal((await post(c.key, { from: '+447911123456', to: '+447700900504', message: 'x'.repeat(1601) })).json().code, 'invalid_message');
    assert.equal((await post(c.key, { from: '+447911123456', to: '+447700900504' })).json().code, 'invalid_request');
    const reader = await h.customer({ scopes: 'inbound:read' });
    assert.equal((await post(reader.key, { from: '+447911123456', to: '+447700900504', message: 'x' })).json().code, 'insufficient_permissions');
    assert.equal((await h.request('GET', '/v1/sms/inbound', { key: other.key })).json().pagination.total, 0, 'nothing was stored');
  });

  test('GET /v1/sms/inbound: filters, pagination, newest first, only the account’s own, scope inbound:read', async () => {
    const c = await customerWithNumber('+447700900506', { events: null });
    await assignNumber(h.ctx, c.accountId, '60700');
    const other = await customerWithNumber('+447700900507', { events: null });
    const times: string[] = [];
    for (const [from, to, message] of [
      ['+447911000001', '+447700900506', 'one'],
      ['+447911000002', '+447700900506', 'two'],
      ['+447911000001', '60700', 'three'],
    ] as const) {
      h.clock.advance(1000);
      times.push(new Date(h.clock.ms).toISOString());
      assert.equal((await h.request('POST', '/v1/simulator/inbound', { key: c.key, body: { from, to, message } })).statusCode, 201);
    }
    await h.request('POST', '/v1/simulator/inbound', { key: other.key, body: { from: '+447911000001', to: '+447700900507', message: 'other' } });
    const get = async (q: string) => (await h.request('GET', `/v1/sms/inbound${q}`, { key: c.key })).json();
    assert.deepEqual((await get('')).data.map((m: { message: string }) => m.message), ['three', 'two', 'one']);
    assert.deepEqual((await get('?from=%2B447911000001')).data.map((m: { message: string }) => m.message), ['three', 'one']);
    assert.deepEqual((await get('?to=60700')).data.map((m: { message: string }) => m.message), ['three']);
    assert.deepEqual((await get(`?since=${times[1]}`)).data.map((m: { message: string }) => m.message), ['three', 'two']);
    assert.deepEqual((await get(`?until=${times[1]}`)).data.map((m: { message: string }) => m.message), ['two', 'one']);
    const page2 = await get('?limit=2&page=2');
    assert.deepEqual(page2.data.map((m: { message: string }) => m.message), ['one']);
    assert.deepEqual(page2.pagination, { page: 2, limit: 2, total: 3 });
    for (const q of ['?since=yesterday', '?limit=201', '?page=0']) {
      const res = await h.request('GET', `/v1/sms/inbound${q}`, { key: c.key });
      assert.equal(res.statusCode, 400, q);
      assert.equal(res.json().code, 'invalid_request', q);
    }
    const sender = await h.customer({ scopes: 'sms:send' });
    assert.equal((await h.request('GET', '/v1/sms/inbound', { key: sender.key })).statusCode, 403);
  });

  test('a message to a number nobody holds is kept as unrouted, never lost; a released number stops routing', async () => {
    const c = await customerWithNumber('+447700900508', { events: null });
    await releaseNumber(h.ctx, '+447700900508');
    const { routed, inbound, accountId } = await simulateInbound(h.ctx, { from: '+447911123456', to: '+447700900508', message: 'anyone?' });
    assert.equal(routed, false);
    assert.equal(accountId, null);
    const unrouted = await listUnrouted(h.ctx);
    assert.equal(unrouted[0]!.id, inbound.id);
    assert.equal(unrouted[0]!.message, 'anyone?');
    assert.equal((await h.request('GET', '/v1/sms/inbound', { key: c.key })).json().pagination.total, 0);
  });
});
