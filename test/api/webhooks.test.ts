import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';
import { createWorkers, type Workers } from '../../src/workers/workers.ts';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.ts';
import { getAccount, rotateWebhookSecret } from '../../src/services/accounts/accounts.ts';
import { verifyWebhookSignature } from '../../src/domain/webhook-signature.ts';
import { makeTestCa, startReceiver, type Behaviour, type Receiver, type TestCa } from './webhooks-receiver.ts';

const DELAYS = [0, 300, 600];
const TIMEOUT_MS = 300;

/** Behaviour by the first path segment; `/flaky` fails twice, then answers 200. */
function behave(path: string, seen: number): Behaviour {
  const kind = path.split('/')[1];
  switch (kind) {
    case 'ok':
      return { status: 200 };
    case 'e500':
      return { status: 500 };
    case 'e201':
      return { status: 201 };
    case 'e204':
      return { status: 204 };
    case 'e302':
      return { status: 302, headers: { location: '/ok/redirected' } };
    case 'slow':
      return { status: 200, delayMs: TIMEOUT_MS * 4 };
    case 'hang':
      return 'hang';
    case 'close':
      return 'close';
    case 'flaky':
      return seen < 2 ? { status: 500 } : { status: 200 };
    case 'sentslow':
      return { status: 200, delayMs: 50 };
    default:
      return { status: 404 };
  }
}

describe('webhook delivery to a real HTTPS receiver', () => {
  let ca: TestCa;
  let receiver: Receiver;
  let other: Receiver;
  let h: Harness;
  let workers: Workers;
  let seq = 0;

  before(async () => {
    ca = makeTestCa();
    receiver = await startReceiver(ca, behave);
    other = await startReceiver(ca, behave);
    h = await harness({
      WEBHOOK_RETRY_DELAYS_MS: DELAYS.join(','),
      WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
      WEBHOOK_ALLOW_PRIVATE: 'true',
      SIM_DELIVERY_DELAY_MS: '0',
    });
    // The harness's own workers trust only the system CAs; these trust the test CA.
    const dispatcher = new WebhookDispatcher({ timeoutMs: TIMEOUT_MS, allowPrivate: true, ca: ca.ca, maxSocketsPerHost: 2 });
    workers = createWorkers(h.ctx, h.carrier, { webhook: { dispatcher, perHost: 2 } });
  });
  after(async () => {
    await workers.stop();
    await h.close();
    await receiver.close();
    await other.close();
    ca.cleanup();
  });

  /** Sends one message whose only event is sms.sent (the simulator never reports on ...1111). */
  async function sendOne(key: string, callback: string, to = '+447911121111') {
    const res = await h.request('POST', '/v1/sms/send', { key, body: { to, from: 'Acme', message: 'hi', callback_url: callback } });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().message_id as string;
  }
  const path = (kind: string) => `/${kind}/${++seq}`;
  const hits = (r: Receiver, p: string) => r.received.filter((x) => x.path === p);
  const events = (messageId: string) =>
    h.ctx.store.db.selectFrom('webhook_events').selectAll().where('message_id', '=', messageId).orderBy('created_at').orderBy('id').execute();
  const attempts = (eventId: string) => h.ctx.store.db.selectFrom('webhook_attempts').selectAll().where('event_id', '=', eventId).orderBy('attempt').execute();

  test('HTTP 200: delivered once, signed, with the spec payload and headers', async () => {
    const { key, accountId } = await h.customer();
    const p = path('ok');
    const id = await sendOne(key, receiver.url(p));
    await workers.drain();
    h.clock.advance(10_000);
    await workers.drain();
    const got = hits(receiver, p);
    assert.equal(got.length, 1);
    const [event] = await events(id);
    assert.equal(event!.status, 'delivered');
    assert.equal(event!.attempts, 1);
    const req = got[0]!;
    assert.equal(req.body, event!.payload, 'the stored body, byte for byte');
    assert.equal(req.headers['content-type'], 'application/json');
    assert.equal(req.headers['x-pigeon-event-id'], event!.id);
    const body = JSON.parse(req.body);
    assert.deepEqual(Object.keys(body).sort(), ['batch_id', 'delivered_at', 'event', 'from', 'message_id', 'sent_at', 'status', 'timestamp', 'to']);
    assert.equal(body.event, 'sms.sent');
    assert.equal(body.batch_id, null);
    assert.equal(body.message_id, id);

    const secret = (await getAccount(h.ctx, accountId)).webhook_secret;
    const header = String(req.headers['x-pigeon-signature']);
    assert.match(header, /^t=\d+,v1=[0-9a-f]{64}$/);
    const nowSeconds = Math.floor(h.clock.now() / 1000);
    assert.equal(verifyWebhookSignature(req.body, header, secret, { nowSeconds }), true);
    assert.equal(verifyWebhookSignature(req.body.replace('sms.sent', 'sms.delivered'), header, secret, { nowSeconds }), false, 'tampered body');
    assert.equal(verifyWebhookSignature(req.body, header, 'whsec_other', { nowSeconds }), false, 'other secret');

    const [attempt] = await attempts(event!.id);
    assert.equal(attempt!.http_status, 200);
    assert.equal(attempt!.error, null);
  });

  for (const kind of ['e500', 'e201', 'e204', 'e302', 'slow', 'close']) {
    test(`${kind}: a failure, retried to exactly ${DELAYS.length} attempts at the configured spacing, then undelivered`, async () => {
      const { key } = await h.customer();
      const p = path(kind);
      const id = await sendOne(key, receiver.url(p));
      const start = h.clock.now();
      await workers.drain();
      assert.equal(hits(receiver, p).length, 1);
      h.clock.advance(DELAYS[1]! - 1);
      await workers.drain();
      assert.equal(hits(receiver, p).length, 1, 'not before the delay');
      h.clock.advance(1);
      await workers.drain();
      assert.equal(hits(receiver, p).length, 2);
      const [pending] = await events(id);
      assert.equal(pending!.status, 'pending');
      h.clock.advance(DELAYS[2]!);
      await workers.drain();
      h.clock.advance(3_600_000);
      await workers.drain();

      const got = hits(receiver, p);
      assert.equal(got.length, DELAYS.length);
      assert.equal(new Set(got.map((g) => g.body)).size, 1, 'byte-identical bodies');
      assert.equal(new Set(got.map((g) => g.headers['x-pigeon-event-id'])).size, 1, 'one event id');
      assert.equal(hits(receiver, '/ok/redirected').length, 0, 'redirects are not followed');
      const [event] = await events(id);
      assert.equal(event!.status, 'undelivered');
      assert.equal(event!.attempts, DELAYS.length);
      const rows = await attempts(event!.id);
      assert.deepEqual(rows.map((r) => Number(r.attempted_at) - start), [0, DELAYS[1], DELAYS[1]! + DELAYS[2]!]);
      for (const r of rows) {
        if (kind === 'slow') assert.match(r.error!, /timeout/);
        else if (kind === 'close') assert.match(r.error!, /connection/);
        else assert.equal(r.http_status, Number(kind.slice(1)));
      }
      assert.ok(event!.last_error);
    });
  }

  test('failing twice then 200 stops at the third attempt, delivered', async () => {
    const { key } = await h.customer();
    const p = path('flaky');
    const id = await sendOne(key, receiver.url(p));
    await workers.drain();
    h.clock.advance(DELAYS[1]!);
    await workers.drain();
    h.clock.advance(DELAYS[2]!);
    await workers.drain();
    h.clock.advance(3_600_000);
    await workers.drain();
    assert.equal(hits(receiver, p).length, 3);
    const [event] = await events(id);
    assert.equal(event!.status, 'delivered');
    assert.deepEqual((await attempts(event!.id)).map((a) => a.http_status), [500, 500, 200]);
  });

  test("a message's sms.sent is attempted, and answered, before its sms.delivered", async () => {
    const { key } = await h.customer();
    const p = path('sentslow');
    // With SIM_DELIVERY_DELAY_MS=0 both events exist before the webhook queue is drained.
    const id = await sendOne(key, receiver.url(p), '+447911123456');
    await workers.drain();
    const got = hits(receiver, p);
    assert.deepEqual(got.map((g) => JSON.parse(g.body).event), ['sms.sent', 'sms.delivered']);
    assert.ok(got[1]!.at >= got[0]!.doneAt, 'the second starts after the first was answered');
    assert.deepEqual((await events(id)).map((e) => e.status), ['delivered', 'delivered']);
  });

  test('bulk events carry the batch_id', async () => {
    const { key } = await h.customer();
    const p = path('ok');
    const res = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', callback_url: receiver.url(p), messages: [{ to: '+447911121111', message: 'x' }] } });
    await workers.drain();
    const got = hits(receiver, p);
    assert.equal(got.length, 1);
    assert.equal(JSON.parse(got[0]!.body).batch_id, res.json().batch_id);
  });

  test('sms.failed carries error_code and error_message', async () => {
    const { key } = await h.customer();
    const p = path('ok');
    await sendOne(key, receiver.url(p), '+447911120000');
    await workers.drain();
    const bodies = hits(receiver, p).map((g) => JSON.parse(g.body));
    assert.deepEqual(bodies.map((b) => b.event), ['sms.sent', 'sms.failed']);
    assert.equal(bodies[1].error_code, 'subscriber_unreachable');
    assert.equal(typeof bodies[1].error_message, 'string');
    assert.equal(bodies[1].status, 'failed');
  });

  test('callback_events: a send gets the events it named and no others; a bulk, each of its messages', async () => {
    const { key } = await h.customer();
    const outcome = path('ok');
    const failures = path('ok');
    const send = (to: string, p: string, events: string[]) =>
      h.request('POST', '/v1/sms/send', { key, body: { to, from: 'Acme', message: 'hi', callback_url: receiver.url(p), callback_events: events } });
    // The outcome alone (Kannel's dlr-mask 3): delivered, failed; a message that stays `sent` gets nothing.
    const delivered = (await send('+447911123456', outcome, ['sms.failed', 'sms.delivered'])).json().message_id;
    await send('+447911120000', outcome, ['sms.delivered', 'sms.failed']);
    const unanswered = (await send('+447911121111', outcome, ['sms.delivered', 'sms.failed'])).json().message_id;
    await send('+447911123457', failures, ['sms.failed']);
    await send('+447911120000', failures, ['sms.failed']);
    const bulk = path('ok');
    await h.request('POST', '/v1/sms/bulk', {
      key,
      body: { from: 'Acme', callback_url: receiver.url(bulk), callback_events: ['sms.sent'], messages: [{ to: '+447911123456', message: 'a' }, { to: '+447911120000', message: 'b' }] },
    });
    await workers.drain();
    h.clock.advance(10_000);
    await workers.drain();
    const got = (p: string) => hits(receiver, p).map((g) => JSON.parse(g.body).event).sort();
    assert.deepEqual(got(outcome), ['sms.delivered', 'sms.failed']);
    assert.deepEqual(got(failures), ['sms.failed']);
    assert.deepEqual(got(bulk), ['sms.sent', 'sms.sent']);
    // Not made at all: nothing stored for the events left out.
    assert.deepEqual((await events(delivered)).map((e) => e.event), ['sms.delivered']);
    assert.deepEqual(await events(unanswered), []);
    // All three named is the default: every event.
    const all = path('ok');
    await send('+447911123456', all, ['sms.sent', 'sms.delivered', 'sms.failed']);
    await workers.drain();
    assert.deepEqual(got(all), ['sms.delivered', 'sms.sent']);
  });

  test('callback_events that name nothing, something else, one twice, or no callback_url are refused, nothing debited', async () => {
    const { key } = await h.customer({ credits: 5 });
    const cases: Record<string, unknown>[] = [
      { callback_url: receiver.url(path('ok')), callback_events: [] },
      { callback_url: receiver.url(path('ok')), callback_events: ['sms.received'] },
      { callback_url: receiver.url(path('ok')), callback_events: ['sms.failed', 'sms.failed'] },
      { callback_events: ['sms.delivered'] },
    ];
    for (const extra of cases) {
      for (const [route, body] of [
        ['/v1/sms/send', { to: '+447911123456', from: 'Acme', message: 'hi', ...extra }],
        ['/v1/sms/bulk', { from: 'Acme', messages: [{ to: '+447911123456', message: 'hi' }], ...extra }],
      ] as const) {
        const res = await h.request('POST', route, { key, body });
        assert.equal(res.statusCode, 400, `${route} ${JSON.stringify(extra)}: ${res.body}`);
        assert.equal(res.json().code, 'invalid_request');
        assert.equal(res.json().details[0].field, 'callback_events');
      }
    }
    assert.equal((await h.request('GET', '/v1/account', { key })).json().data.credits_remaining, 5);
  });

  test('after a secret rotation both secrets sign, and each verifies', async () => {
    const { key, accountId } = await h.customer();
    const old = (await getAccount(h.ctx, accountId)).webhook_secret;
    const rotated = await rotateWebhookSecret(h.ctx, accountId);
    const p = path('ok');
    await sendOne(key, receiver.url(p));
    await workers.drain();
    const req = hits(receiver, p)[0]!;
    const header = String(req.headers['x-pigeon-signature']);
    assert.match(header, /^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    const nowSeconds = Math.floor(h.clock.now() / 1000);
    assert.equal(verifyWebhookSignature(req.body, header, old, { nowSeconds }), true);
    assert.equal(verifyWebhookSignature(req.body, header, rotated.webhook_secret, { nowSeconds }), true);
  });

  test('a hanging host holds at most its cap; another host is served meanwhile; put-back jobs count no attempt', async () => {
    const { key } = await h.customer({ credits: 1000 });
    const hang = path('hang');
    const ok = path('ok');
    const hangIds: string[] = [];
    for (let i = 0; i < 10; i++) hangIds.push(await sendOne(key, other.url(`${hang}/${i}`)));
    for (let i = 0; i < 2; i++) await sendOne(key, receiver.url(`${ok}/${i}`));
    await workers.drain();
    assert.equal(receiver.received.filter((r) => r.path.startsWith(`${ok}/`)).length, 2, 'the healthy host got its events at once');
    assert.equal(other.maxOpen.get('hang'), 2, 'the hanging host never had more than its cap open');
    const tried = (await Promise.all(hangIds.map(async (m) => (await events(m))[0]!.attempts))).filter((n) => n > 0).length;
    // Two at a time, two more waiting in memory; the rest went back to the table, no attempt counted.
    assert.equal(tried, 4);
  });
});

describe('SSRF guard', () => {
  let ca: TestCa;
  let receiver: Receiver;
  before(async () => {
    ca = makeTestCa();
    receiver = await startReceiver(ca, () => ({ status: 200 }));
  });
  after(async () => {
    await receiver.close();
    ca.cleanup();
  });
  const deliver = (d: WebhookDispatcher, url: string) => d.deliver({ url, body: '{}', eventId: 'evt_x', secrets: ['whsec_x'], now: Date.now() });

  test('loopback targets are refused without WEBHOOK_ALLOW_PRIVATE, by address or by name', async () => {
    const d = new WebhookDispatcher({ timeoutMs: 2000, allowPrivate: false, ca: ca.ca });
    for (const url of [receiver.url('/a'), `https://[::ffff:127.0.0.1]:${receiver.port}/c`]) {
      const out = await deliver(d, url);
      assert.equal(out.ok, false, url);
      assert.match(out.error!, /^refused: .*(loopback)/, url);
    }
    for (const url of [`https://localhost:${receiver.port}/b`, 'https://hooks.example.com/sms', 'https://app.test/x']) {
      assert.match((await deliver(d, url)).error!, /^refused: .*special-use name/, url);
    }
    assert.equal(receiver.received.length, 0);
    const allowed = new WebhookDispatcher({ timeoutMs: 2000, allowPrivate: true, ca: ca.ca });
    assert.equal((await deliver(allowed, `https://localhost:${receiver.port}/d`)).ok, true);
    d.close();
    allowed.close();
  });

  test('every attempt re-resolves and re-checks the name (DNS rebinding), and connects to the checked address', async () => {
    const answers = [[{ address: '127.0.0.1', family: 4 }], [{ address: '10.0.0.7', family: 4 }], [{ address: '8.8.8.8', family: 4 }, { address: '169.254.169.254', family: 4 }]];
    let calls = 0;
    // No answer reuse here, as for attempts further apart than the cache time (1 s by default).
    const d = new WebhookDispatcher({ timeoutMs: 2000, allowPrivate: false, ca: ca.ca, dnsCacheMs: 0, resolver: async () => answers[calls++]! });
    const errors = [];
    for (let i = 0; i < answers.length; i++) errors.push((await deliver(d, `https://hooks.rebind.pigeon-tests.net:${receiver.port}/x`)).error);
    assert.equal(calls, 3);
    assert.match(errors[0]!, /loopback/);
    assert.match(errors[1]!, /private/);
    assert.match(errors[2]!, /metadata/);
    const pinned = new WebhookDispatcher({ timeoutMs: 2000, allowPrivate: true, ca: ca.ca, resolver: async () => [{ address: '127.0.0.1', family: 4 }] });
    // The name does not exist in DNS: reaching the receiver proves the checked address was used.
    const out = await deliver(pinned, `https://localhost:${receiver.port}/pinned`);
    assert.equal(out.ok, true);
    d.close();
    pinned.close();
  });

  test('plain http and a certificate that is not trusted are failures', async () => {
    const d = new WebhookDispatcher({ timeoutMs: 2000, allowPrivate: true });
    const plain = await deliver(d, `http://127.0.0.1:${receiver.port}/`);
    assert.match(plain.error!, /only https/);
    const untrusted = await deliver(d, receiver.url('/untrusted'));
    assert.equal(untrusted.ok, false);
    assert.match(untrusted.error!, /^TLS failure/);
    d.close();
  });
});
