/** Every method of the client against a real Pigeon server over HTTP. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Pigeon,
  PigeonApiError,
  PigeonAuthenticationError,
  PigeonInvalidRequestError,
  PigeonPermissionError,
  type DeliveryReport,
} from '../src/index.ts';
import { liveServer, type LiveServer } from './server.ts';

describe('client against a live server', () => {
  let server: LiveServer;
  before(async () => {
    // One webhook attempt only, so an event to an unreachable receiver is soon `undelivered`.
    server = await liveServer({ WEBHOOK_RETRY_DELAYS_MS: '0', LINK_BASE_URL: 'https://127.0.0.1:8443/l' });
  });
  after(() => server.close());

  const client = (apiKey: string, extra: Partial<ConstructorParameters<typeof Pigeon>[0]> = {}) =>
    new Pigeon({ apiKey, baseUrl: server.baseUrl, sleep: async () => {}, ...extra });

  test('sms.send with send_at schedules; sms.cancel and sms.cancelBatch cancel and refund', async () => {
    const { key } = await server.h.customer({ credits: 10 });
    const pigeon = client(key);
    const sendAt = new Date(server.h.clock.now() + 3_600_000).toISOString();
    const one = await pigeon.sms.send({ to: '+447911123456', from: 'Acme', message: 'later', send_at: sendAt, validity_period: 600 });
    assert.equal(one.send_at, sendAt);
    assert.equal(one.validity_period, 600);
    const batch = await pigeon.sms.bulk({ from: 'Acme', send_at: sendAt, messages: [{ to: '+447911123456', message: 'a' }, { to: '+447911123457', message: 'b' }] });
    assert.equal(batch.send_at, sendAt);
    assert.equal((await pigeon.deliveryReports.list({ status: 'scheduled' })).pagination.total, 3);
    assert.deepEqual(await pigeon.sms.cancel(one.message_id), { status: 'success', data: { canceled: [one.message_id], credits_refunded: 1 } });
    const canceled = await pigeon.sms.cancelBatch(batch.batch_id);
    assert.equal(canceled.data.credits_refunded, 2);
    assert.equal((await pigeon.account.get()).data.credits_remaining, 10);
    await assert.rejects(pigeon.sms.cancel(one.message_id), (err: PigeonApiError) => err.code === 'not_cancelable' && err.status === 409);
    await assert.rejects(pigeon.sms.cancelBatch('bat_nope'), (err: PigeonApiError) => err.code === 'not_found' && err.status === 404);
  });

  test('sms.quote prices a send without sending it; account.pricing reads a destination\'s price', async () => {
    const { key } = await server.h.customer({ credits: 10 });
    const pigeon = client(key);
    assert.deepEqual(await pigeon.sms.quote({ to: '+447911123456', from: 'Acme', message: 'x'.repeat(161) }), {
      status: 'success',
      data: { segments: 2, encoding: 'GSM-7', credits_per_segment: 1, credits: 2 },
    });
    assert.equal((await pigeon.account.get()).data.credits_remaining, 10);
    assert.equal((await pigeon.deliveryReports.list()).pagination.total, 0);
    const price = await pigeon.account.pricing('+44 7911 123456');
    assert.deepEqual(price, { status: 'success', data: { to: '+447911123456', prefix: '+', credits_per_segment: 1, effective_from: '1970-01-01T00:00:00.000Z', next_change: null } });
    await assert.rejects(pigeon.account.pricing('+44'), (err: PigeonApiError) => err.code === 'invalid_recipient' && err.status === 400);
    await assert.rejects(pigeon.sms.quote({ to: '+44', from: 'Acme', message: 'x' }), (err: PigeonApiError) => err.code === 'invalid_recipient');
  });

  test('sms.send with track_links shortens the link; sms.links lists it with its clicks', async () => {
    const { key } = await server.h.customer({ credits: 10 });
    const pigeon = client(key);
    const sent = await pigeon.sms.send({ to: '+447911123456', from: 'Acme', message: 'Sale: https://127.0.0.1/sale', track_links: true });
    const page = await pigeon.sms.links({ message_id: sent.message_id });
    assert.equal(page.pagination.total, 1);
    const [link] = page.data;
    assert.deepEqual({ ...link!, short_url: undefined }, { message_id: sent.message_id, url: 'https://127.0.0.1/sale', short_url: undefined, clicks: 0, first_clicked_at: null });
    assert.match(link!.short_url, /^https:\/\/127\.0\.0\.1:8443\/l\/[0-9A-Za-z]{8}$/);
    await assert.rejects(pigeon.sms.links({}), (err: PigeonApiError) => err.code === 'invalid_request' && err.status === 400);
  });

  test('account.get reads the balance', async () => {
    const { key, accountId } = await server.h.customer({ credits: 42 });
    const account = await client(key).account.get();
    assert.deepEqual(account, { status: 'success', data: { id: accountId, name: account.data.name, status: 'active', credits_remaining: 42, messages_pending: 0 } });
  });

  test('one return convention: every method gives the whole JSON body the API answered', async () => {
    const { key } = await server.h.customer({ credits: 10 });
    const pigeon = client(key);
    const raw = async (path: string) => (await fetch(`${server.baseUrl}/v1${path}`, { headers: { authorization: `Bearer ${key}` } })).json();
    const sent = await pigeon.sms.send({ to: '+447911123456', from: 'Acme', message: 'shape' });
    await server.h.workers.drain();
    assert.deepEqual(await pigeon.account.get(), await raw('/account'));
    assert.deepEqual(await pigeon.senderIds.list(), await raw('/sms/sender-ids'));
    assert.deepEqual(await pigeon.deliveryReports.list({ message_id: sent.message_id }), await raw(`/sms/delivery-reports?message_id=${sent.message_id}`));
    assert.deepEqual(await pigeon.webhooks.listEvents(), await raw('/webhooks/events'));
    const results = [
      sent,
      await pigeon.sms.bulk({ from: 'Acme', messages: [{ to: '+447911123457', message: 'x' }] }),
      await pigeon.senderIds.create('Shape1'),
      await pigeon.account.get(),
      await pigeon.senderIds.list(),
      await pigeon.deliveryReports.list(),
      await pigeon.webhooks.listEvents(),
    ];
    for (const r of results) assert.equal((r as { status: string }).status, 'success', JSON.stringify(r));
  });

  test('the base URL may carry /v1', async () => {
    const { key } = await server.h.customer({ credits: 1 });
    const account = await new Pigeon({ apiKey: key, baseUrl: `${server.baseUrl}/v1/` }).account.get();
    assert.equal(account.data.credits_remaining, 1);
  });

  test('senderIds.create and senderIds.list', async () => {
    const { key } = await server.h.customer({ sender: null });
    const pigeon = client(key);
    const created = await pigeon.senderIds.create('Brand1');
    assert.equal(created.status, 'success');
    assert.equal(created.data.name, 'Brand1');
    assert.equal(created.data.status, 'pending');
    assert.match(created.data.id ?? '', /\S/);
    const list = await pigeon.senderIds.list();
    assert.deepEqual(list, { status: 'success', data: [created.data] });
  });

  test('sms.send returns the send result and the message shows in the reports', async () => {
    const { key } = await server.h.customer({ credits: 10 });
    const pigeon = client(key);
    const sent = await pigeon.sms.send({ to: '+44 7911 123456', from: 'acme', message: 'Hello from the client' });
    assert.equal(sent.status, 'success');
    assert.equal(sent.to, '+44 7911 123456');
    assert.equal(sent.from, 'Acme');
    assert.equal(sent.segments, 1);
    assert.equal(sent.encoding, 'GSM-7');
    assert.equal(sent.credits_remaining, 9);
    const page = await pigeon.deliveryReports.list({ message_id: sent.message_id });
    assert.equal(page.pagination.total, 1);
    assert.equal(page.data[0]?.to, '+447911123456');
    assert.equal(page.data[0]?.status, 'pending');
  });

  test('sms.bulk queues the valid entries and lists the invalid ones', async () => {
    const { key } = await server.h.customer({ credits: 10 });
    const result = await client(key).sms.bulk({
      from: 'Acme',
      messages: [
        { to: '+447911123456', message: 'one' },
        { to: 'not a number', message: 'two' },
        { to: '+254712345678', message: 'three' },
      ],
    });
    assert.equal(result.total, 3);
    assert.equal(result.queued, 2);
    assert.equal(result.credits_used, 2);
    assert.deepEqual(result.errors.map((e) => [e.index, e.code]), [[1, 'invalid_recipient']]);
    assert.deepEqual(result.messages.map((m) => m.index), [0, 2]);
  });

  test('deliveryReports.iterate walks every page', async () => {
    const { key } = await server.h.customer({ credits: 100 });
    let requests = 0;
    const pigeon = client(key, { fetch: (input, init) => (requests++, fetch(input, init)) });
    const messages = Array.from({ length: 23 }, (_, i) => ({ to: `+4479111${String(10000 + i)}`, message: `m${i}` }));
    const bulk = await pigeon.sms.bulk({ from: 'Acme', messages });
    assert.equal(bulk.queued, 23);
    requests = 0;
    const seen: DeliveryReport[] = [];
    for await (const report of pigeon.deliveryReports.iterate({ batch_id: bulk.batch_id, limit: 10 })) seen.push(report);
    assert.equal(requests, 3, 'pages of 10, 10 and 3');
    assert.deepEqual(seen.map((r) => r.message_id).sort(), bulk.messages.map((m) => m.message_id).sort());
    assert.ok(seen.every((r) => r.batch_id === bulk.batch_id));
  });

  test('deliveryReports.iterate over nothing yields nothing', async () => {
    const { key } = await server.h.customer();
    const seen = [];
    for await (const r of client(key).deliveryReports.iterate({ batch_id: 'bat_unknown' })) seen.push(r);
    assert.deepEqual(seen, []);
  });

  test('webhooks.listEvents and webhooks.retryEvent', async () => {
    const { key } = await server.h.customer({ credits: 10 });
    const pigeon = client(key);
    const sent = await pigeon.sms.send({ to: '+447911123456', from: 'Acme', message: 'with events', callback_url: 'https://127.0.0.1:9/hooks' });
    await server.h.workers.drain();
    const page = await pigeon.webhooks.listEvents({ message_id: sent.message_id });
    assert.ok(page.pagination.total >= 1);
    const sentEvent = page.data.find((e) => e.event === 'sms.sent');
    assert.ok(sentEvent, 'an sms.sent event was recorded');
    assert.equal(sentEvent.message_id, sent.message_id);
    assert.equal(sentEvent.payload.message_id, sent.message_id);
    const undelivered = page.data.find((e) => e.status === 'undelivered');
    assert.ok(undelivered, `an undelivered event: ${JSON.stringify(page.data.map((e) => [e.event, e.status, e.last_error]))}`);
    const retried = await pigeon.webhooks.retryEvent(undelivered.id);
    assert.equal(retried.status, 'success');
    assert.equal(retried.data.id, undelivered.id);
    await assert.rejects(pigeon.webhooks.retryEvent('evt_unknown'), (err: PigeonApiError) => {
      assert.ok(err instanceof PigeonInvalidRequestError);
      assert.equal(err.status, 404);
      assert.equal(err.code, 'webhook_event_not_found');
      return true;
    });
  });

  describe('errors are typed exceptions', () => {
    test('a bad key is a PigeonAuthenticationError with code, status and docs_url', async () => {
      const err = await client('pk_live_00000000000000000000000000000000').account.get().catch((e: unknown) => e);
      assert.ok(err instanceof PigeonAuthenticationError);
      assert.equal(err.status, 401);
      assert.equal(err.code, 'invalid_api_key');
      assert.equal(err.docs_url, 'https://pigeon.test/docs/errors#invalid_api_key');
    });

    test('a missing scope is a PigeonPermissionError', async () => {
      const { key } = await server.h.customer({ scopes: 'account:read' });
      const err = await client(key).sms.send({ to: '+447911123456', from: 'Acme', message: 'x' }).catch((e: unknown) => e);
      assert.ok(err instanceof PigeonPermissionError);
      assert.equal(err.code, 'insufficient_permissions');
      assert.equal(err.status, 403);
    });

    test('a bad recipient is a PigeonInvalidRequestError and is not retried', async () => {
      const { key } = await server.h.customer();
      let requests = 0;
      const pigeon = client(key, { fetch: (input, init) => (requests++, fetch(input, init)) });
      const err = await pigeon.sms.send({ to: '12', from: 'Acme', message: 'x' }).catch((e: unknown) => e);
      assert.ok(err instanceof PigeonInvalidRequestError);
      assert.equal(err.code, 'invalid_recipient');
      assert.equal(err.status, 400);
      assert.equal(requests, 1);
    });

    test('insufficient credits is 422 with its code', async () => {
      const { key } = await server.h.customer({ credits: 0 });
      const err = await client(key).sms.send({ to: '+447911123456', from: 'Acme', message: 'x' }).catch((e: unknown) => e);
      assert.ok(err instanceof PigeonApiError);
      assert.equal(err.status, 422);
      assert.equal(err.code, 'insufficient_credits');
    });
  });
});
