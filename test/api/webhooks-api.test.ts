import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';
import { createWorkers, type Workers } from '../../src/workers/workers.ts';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.ts';
import { makeTestCa, startReceiver, type Receiver, type TestCa } from './webhooks-receiver.ts';

describe('GET /v1/webhooks/events and POST /v1/webhooks/events/{id}/retry', () => {
  let ca: TestCa;
  let receiver: Receiver;
  let h: Harness;
  let workers: Workers;
  /** Paths under /down fail until `up` is set. */
  let up = false;

  before(async () => {
    ca = makeTestCa();
    receiver = await startReceiver(ca, (path) => (path.startsWith('/down') && !up ? { status: 503 } : { status: 200 }));
    h = await harness({ WEBHOOK_RETRY_DELAYS_MS: '0,100', WEBHOOK_ALLOW_PRIVATE: 'true', SIM_DELIVERY_DELAY_MS: '0' });
    const dispatcher = new WebhookDispatcher({ timeoutMs: 2000, allowPrivate: true, ca: ca.ca });
    workers = createWorkers(h.ctx, h.carrier, { webhook: { dispatcher } });
  });
  after(async () => {
    await workers.stop();
    await h.close();
    await receiver.close();
    ca.cleanup();
  });

  test('lists events with their attempts, filtered and paginated; retries an undelivered one once', async () => {
    const { key } = await h.customer({ credits: 100 });
    const send = async (to: string, path: string) =>
      (await h.request('POST', '/v1/sms/send', { key, body: { to, from: 'Acme', message: 'x', callback_url: receiver.url(path) } })).json().message_id as string;
    const good = await send('+447911123456', '/fine');
    const bad = await send('+447911121111', '/down/1');
    await workers.drain();
    h.clock.advance(100);
    await workers.drain();

    const all = await h.request('GET', '/v1/webhooks/events', { key });
    assert.equal(all.statusCode, 200);
    assert.equal(all.json().pagination.total, 3);
    const byMessage = await h.request('GET', `/v1/webhooks/events?message_id=${good}`, { key });
    assert.deepEqual(byMessage.json().data.map((e: { event: string }) => e.event).sort(), ['sms.delivered', 'sms.sent']);
    const undelivered = (await h.request('GET', '/v1/webhooks/events?status=undelivered', { key })).json();
    assert.equal(undelivered.pagination.total, 1);
    const ev = undelivered.data[0];
    assert.equal(ev.message_id, bad);
    assert.equal(ev.attempt_count, 2);
    assert.deepEqual(ev.attempts.map((a: { http_status: number }) => a.http_status), [503, 503]);
    assert.equal(ev.attempts[0].attempt, 1);
    assert.equal(typeof ev.attempts[0].latency_ms, 'number');
    assert.equal(ev.last_error, 'HTTP 503');
    assert.equal(ev.next_attempt_at, null);
    assert.equal(ev.payload.message_id, bad);
    const page = (await h.request('GET', '/v1/webhooks/events?limit=2&page=2', { key })).json();
    assert.equal(page.data.length, 1);
    assert.deepEqual(page.pagination, { page: 2, limit: 2, total: 3 });
    assert.equal((await h.request('GET', '/v1/webhooks/events?status=sent', { key })).statusCode, 400);
    assert.equal((await h.request('GET', '/v1/webhooks/events?limit=201', { key })).statusCode, 400);

    // A pending or delivered event cannot be retried.
    const delivered = byMessage.json().data[0].id;
    const conflict = await h.request('POST', `/v1/webhooks/events/${delivered}/retry`, { key });
    assert.equal(conflict.statusCode, 409);
    assert.equal(conflict.json().code, 'webhook_event_not_undelivered');

    // A manual retry is one more attempt with the same body; failing, it is undelivered again.
    const retry = await h.request('POST', `/v1/webhooks/events/${ev.id}/retry`, { key });
    assert.equal(retry.statusCode, 202);
    assert.equal(retry.json().data.status, 'pending');
    await workers.drain();
    h.clock.advance(3_600_000);
    await workers.drain();
    let again = (await h.request('GET', `/v1/webhooks/events?message_id=${bad}`, { key })).json().data[0];
    assert.equal(again.status, 'undelivered');
    assert.equal(again.attempt_count, 3);
    up = true;
    await h.request('POST', `/v1/webhooks/events/${ev.id}/retry`, { key });
    await workers.drain();
    again = (await h.request('GET', `/v1/webhooks/events?message_id=${bad}`, { key })).json().data[0];
    assert.equal(again.status, 'delivered');
    assert.equal(again.attempt_count, 4);
    const bodies = receiver.received.filter((r) => r.path === '/down/1').map((r) => r.body);
    assert.equal(bodies.length, 4);
    assert.equal(new Set(bodies).size, 1);
  });

  test('scopes, and another account sees nothing', async () => {
    const owner = await h.customer();
    const res = await h.request('POST', '/v1/sms/send', { key: owner.key, body: { to: '+447911121111', from: 'Acme', message: 'x', callback_url: receiver.url('/fine') } });
    await workers.drain();
    const id = (await h.request('GET', `/v1/webhooks/events?message_id=${res.json().message_id}`, { key: owner.key })).json().data[0].id;

    const stranger = await h.customer();
    const list = (await h.request('GET', '/v1/webhooks/events', { key: stranger.key })).json();
    assert.equal(list.pagination.total, 0);
    const retry = await h.request('POST', `/v1/webhooks/events/${id}/retry`, { key: stranger.key });
    assert.equal(retry.statusCode, 404);
    assert.equal(retry.json().code, 'webhook_event_not_found');
    assert.equal((await h.request('POST', '/v1/webhooks/events/evt_nope/retry', { key: owner.key })).json().code, 'webhook_event_not_found');

    const sendOnly = await h.customer({ scopes: 'sms:send' });
    assert.equal((await h.request('GET', '/v1/webhooks/events', { key: sendOnly.key })).statusCode, 403);
    const readOnly = await h.customer({ scopes: 'reports:read' });
    assert.equal((await h.request('GET', '/v1/webhooks/events', { key: readOnly.key })).statusCode, 200);
    assert.equal((await h.request('POST', `/v1/webhooks/events/${id}/retry`, { key: readOnly.key })).statusCode, 403);
    assert.equal((await h.request('GET', '/v1/webhooks/events')).statusCode, 401);
  });
});
