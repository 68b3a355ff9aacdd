/**
 * The Twilio-compatible API at the HTTP level: the exact keys of its resources, pages and errors,
 * dates, 204s; status callbacks and inbound posts to a real HTTPS receiver on 127.0.0.1, checked
 * with the `twilio` packages' own `validateRequest`; TwiML replies; the shared limit on failed
 * authentications.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { harness, type Harness } from '../helpers/harness.ts';
import { createWorkers, type Workers } from '../../src/workers/workers.ts';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.ts';
import { twilioAccountSid, twilioCredentials } from '../../src/services/twilio/credentials.ts';
import { assignNumber } from '../../src/services/numbers/numbers.ts';
import { setSmsUrl } from '../../src/services/twilio/sms-urls.ts';
import { simulateInbound } from '../../src/services/inbound/inbound.ts';
import { makeTestCa, startReceiver, type Behaviour, type Receiver, type TestCa } from './webhooks-receiver.ts';

const require = createRequire(import.meta.url);
type Validate = (token: string, signature: string, url: string, params: Record<string, string>) => boolean;
const validators: [string, Validate][] = ['twilio5', 'twilio6'].map((name) => [name, (require(name) as { validateRequest: Validate }).validateRequest]);

const RFC2822 = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} \+0000$/;
const MESSAGE_KEYS = [
  'account_sid', 'api_version', 'body', 'date_created', 'date_sent', 'date_updated', 'direction', 'error_code', 'error_message', 'from',
  'num_media', 'num_segments', 'price', 'price_unit', 'sid', 'status', 'subresource_uris', 'to', 'uri',
];
const PAGE_KEYS = ['end', 'first_page_uri', 'messages', 'next_page_uri', 'page', 'page_size', 'previous_page_uri', 'start', 'uri'];
const ERROR_KEYS = ['code', 'message', 'more_info', 'status'];
const NUMBER = '+447700900555';

/** TwiML answers by path. */
const answers = new Map<string, Behaviour>();

describe('the Twilio-compatible API over HTTP', () => {
  let ca: TestCa;
  let receiver: Receiver;
  let h: Harness;
  let workers: Workers;
  let sid: string;
  let token: string;
  let auth: string;
  let key: string;
  let accountId: string;

  before(async () => {
    ca = makeTestCa();
    receiver = await startReceiver(ca, (path, seen) => answers.get(`${path}#${seen}`) ?? answers.get(path) ?? { status: 200, body: '' });
    h = await harness({ WEBHOOK_RETRY_DELAYS_MS: '0,1000', WEBHOOK_ALLOW_PRIVATE: 'true', SIM_DELIVERY_DELAY_MS: '1000', AUTH_FAILURE_LIMIT: '4' });
    workers = createWorkers(h.ctx, h.carrier, { webhook: { dispatcher: new WebhookDispatcher({ timeoutMs: 2000, allowPrivate: true, ca: ca.ca }) } });
    const c = await h.customer({ credits: 50 });
    key = c.key;
    accountId = c.accountId;
    ({ account_sid: sid, auth_token: token } = await twilioCredentials(h.ctx, c.accountId));
    auth = `Basic ${Buffer.from(`${sid}:${token}`).toString('base64')}`;
    await assignNumber(h.ctx, c.accountId, NUMBER);
  });
  after(async () => {
    await workers.stop();
    await h.close();
    await receiver.close();
    ca.cleanup();
  });

  const form = (params: Record<string, string>) => new URLSearchParams(params).toString();
  const post = (path: string, params: Record<string, string>, authorization = auth) =>
    h.app.inject({ method: 'POST', url: `/2010-04-01/Accounts/${sid}${path}`, headers: { authorization, 'content-type': 'application/x-www-form-urlencoded' }, payload: form(params) });
  const get = (path: string, authorization = auth) => h.app.inject({ method: 'GET', url: `/2010-04-01/Accounts/${sid}${path}`, headers: { authorization } });
  const settle = async () => {
    await workers.drain();
    h.clock.advance(1000);
    await workers.drain();
  };
  const hits = (path: string) => receiver.received.filter((r) => r.path === path);
  const paramsOf = (body: string) => Object.fromEntries(new URLSearchParams(body));
  const assertSigned = (hit: { headers: Record<string, unknown>; body: string }, url: string, authToken = token) => {
    for (const [name, validate] of validators) {
      assert.equal(validate(authToken, String(hit.headers['x-twilio-signature']), url, paramsOf(hit.body)), true, `${name} validateRequest`);
      assert.equal(validate('0'.repeat(32), String(hit.headers['x-twilio-signature']), url, paramsOf(hit.body)), false, `${name} with another token`);
    }
  };

  test('the Message resource has exactly its keys, strings where Twilio has strings, RFC 2822 dates', async () => {
    const res = await post('/Messages.json', { To: '+447700900123', From: 'Acme', Body: 'shape' });
    assert.equal(res.statusCode, 201, res.body);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    const m = res.json();
    assert.deepEqual(Object.keys(m).sort(), MESSAGE_KEYS);
    assert.match(m.date_created, RFC2822);
    assert.match(m.date_updated, RFC2822);
    assert.equal(m.date_sent, null);
    assert.equal(m.num_segments, '1');
    assert.equal(m.num_media, '0');
    assert.equal(m.error_code, null);
    assert.equal(m.uri, `/2010-04-01/Accounts/${sid}/Messages/${m.sid}.json`);
    assert.deepEqual(m.subresource_uris, { media: `/2010-04-01/Accounts/${sid}/Messages/${m.sid}/Media.json` });
    const page = await get('/Messages.json?PageSize=1');
    assert.equal(page.statusCode, 200);
    const body = page.json();
    assert.deepEqual(Object.keys(body).sort(), PAGE_KEYS);
    assert.deepEqual([body.page, body.page_size, body.start, body.end], [0, 1, 0, 0]);
    assert.equal(body.next_page_uri, null);
    assert.equal(body.previous_page_uri, null);
    assert.equal(body.first_page_uri, `/2010-04-01/Accounts/${sid}/Messages.json?PageSize=1&Page=0`);
    assert.deepEqual(Object.keys(body.messages[0]).sort(), MESSAGE_KEYS);
    const bad = await get('/Messages.json?PageSize=1001');
    assert.equal(bad.statusCode, 400);
    assert.deepEqual(Object.keys(bad.json()).sort(), ERROR_KEYS);
  });

  test('DELETE of a final message is 204 with an empty body; errors have exactly four keys', async () => {
    const created = (await post('/Messages.json', { To: '+447700902222', From: 'Acme', Body: 'refused by the carrier' })).json();
    await settle();
    const failed = (await get(`/Messages/${created.sid}.json`)).json();
    assert.equal(failed.status, 'failed');
    assert.equal(failed.error_code, 30007);
    assert.equal(failed.price, '0.00', 'refunded');
    const del = await h.app.inject({ method: 'DELETE', url: `/2010-04-01/Accounts/${sid}/Messages/${created.sid}.json`, headers: { authorization: auth } });
    assert.equal(del.statusCode, 204);
    assert.equal(del.body, '');
    const cases: [Promise<{ statusCode: number; json(): any }>, number, number][] = [
      [get(`/Messages/${created.sid}.json`), 404, 20404],
      [get('/Messages/SMnope.json'), 404, 20404],
      [h.app.inject({ method: 'GET', url: `/2010-04-01/Accounts/AC${'0'.repeat(32)}/Messages.json`, headers: { authorization: auth } }), 404, 20404],
      [get('/Messages.json', ''), 401, 20003],
      [post('/Messages.json', { From: 'Acme', Body: 'x' }), 400, 21604],
      [post('/Messages.json', { To: '+447700900123', Body: 'x' }), 400, 21603],
      [post('/Messages.json', { To: '+447700900123', From: 'Acme', Body: 'x', SendAt: '2026-03-02T00:00:00Z' }), 400, 35111],
      [post('/Messages.json', { To: '+447700900123', From: 'Acme', Body: 'x', ValidityPeriod: '5' }), 400, 20001],
      [h.app.inject({ method: 'POST', url: `/2010-04-01/Accounts/${sid}/Messages.json`, headers: { authorization: auth, 'content-type': 'application/json' }, payload: '{}' }), 415, 20001],
    ];
    for (const [pending, status, code] of cases) {
      const res = await pending;
      assert.equal(res.statusCode, status, JSON.stringify(res.json()));
      assert.deepEqual(Object.keys(res.json()).sort(), ERROR_KEYS);
      assert.equal(res.json().code, code);
      assert.equal(res.json().status, status);
      assert.equal(res.json().more_info, 'https://pigeon.test/docs/guides/moving-from-twilio#error-codes');
    }
  });

  test('status callbacks: form-encoded, signed, on sent and delivered, with the receipt date', async () => {
    const url = receiver.url('/status?tenant=7');
    const created = (await post('/Messages.json', { To: '+447700900124', From: 'Acme', Body: 'with a callback', StatusCallback: url })).json();
    await settle();
    const seen = hits('/status?tenant=7');
    assert.equal(seen.length, 2);
    assert.equal(seen[0]!.headers['content-type'], 'application/x-www-form-urlencoded');
    const sent = paramsOf(seen[0]!.body);
    assert.deepEqual(sent, {
      MessageSid: created.sid, SmsSid: created.sid, MessageStatus: 'sent', SmsStatus: 'sent', AccountSid: sid,
      From: 'Acme', To: '+447700900124', ApiVersion: '2010-04-01',
    });
    const delivered = paramsOf(seen[1]!.body);
    assert.equal(delivered.MessageStatus, 'delivered');
    assert.match(delivered.RawDlrDoneDate!, /^2603011200$/);
    for (const hit of seen) assertSigned(hit, url);
  });

  test('a failed message calls back undelivered with its error code; a non-2xx answer is retried', async () => {
    const url = receiver.url('/flaky');
    answers.set('/flaky#0', { status: 500 });
    answers.set('/flaky#1', { status: 204 });
    const created = (await post('/Messages.json', { To: '+447700900000', From: 'Acme', Body: 'unreachable', StatusCallback: url })).json();
    await settle();
    h.clock.advance(1000);
    await workers.drain();
    const bodies = hits('/flaky').map((x) => paramsOf(x.body));
    assert.deepEqual(bodies.map((b) => b.MessageStatus), ['sent', 'sent', 'undelivered'], 'the first attempt failed and was made again');
    assert.equal(bodies[2]!.ErrorCode, '30003');
    assert.equal(bodies[2]!.MessageSid, created.sid);
    const events = await h.request('GET', '/v1/webhooks/events?limit=10', { key });
    const ours = events.json().data.filter((e: { url: string }) => e.url === url);
    assert.deepEqual(ours.map((e: { event: string; status: string }) => `${e.event}:${e.status}`).sort(), ['twilio.status:delivered', 'twilio.status:delivered']);
  });

  test('inbound to a number with an sms_url is posted Twilio-style and signed; a TwiML Message is sent back, charged', async () => {
    const url = receiver.url('/sms');
    await setSmsUrl(h.ctx, accountId, NUMBER, url);
    answers.set('/sms#0', { status: 200, headers: { 'content-type': 'text/xml' }, body: '<?xml version="1.0" encoding="UTF-8"?><Response><Message>Thanks &amp; see you</Message></Response>' });
    const credits = async () => (await h.request('GET', '/v1/account', { key })).json().data.credits_remaining as number;
    const before = await credits();
    const { inbound } = await simulateInbound(h.ctx, { from: '+447700900888', to: NUMBER, message: 'Hello there' });
    await workers.drain();
    const [hit] = hits('/sms');
    assert.ok(hit);
    const params = paramsOf(hit.body);
    assert.match(params.MessageSid!, /^SM[0-9a-f]{32}$/);
    assert.deepEqual(params, {
      MessageSid: params.MessageSid, SmsSid: params.MessageSid, SmsMessageSid: params.MessageSid, AccountSid: sid,
      From: '+447700900888', To: NUMBER, Body: 'Hello there', NumSegments: '1', NumMedia: '0', SmsStatus: 'received', ApiVersion: '2010-04-01',
    });
    assert.ok(inbound.id);
    assertSigned(hit, url);
    const replies = (await get(`/Messages.json?To=${encodeURIComponent('+447700900888')}`)).json().messages;
    assert.deepEqual(replies.map((m: { body: string; from: string }) => `${m.from}: ${m.body}`), [`${NUMBER}: Thanks & see you`]);
    assert.equal(await credits(), before - 1);
  });

  test('no reply for <Response/>, an empty answer, malformed or huge TwiML, or an opted-out sender', async () => {
    const cases: [string, Behaviour][] = [
      ['empty', { status: 200, body: '<Response/>' }],
      ['nothing', { status: 204 }],
      ['malformed', { status: 200, body: '<Response><Message>unclosed</Response>' }],
      ['huge', { status: 200, body: `<Response><Message>${'x'.repeat(40_000)}</Message></Response>` }],
      ['stop', { status: 200, body: '<Response><Message>Sorry to see you go</Message></Response>' }],
    ];
    for (const [name, answer] of cases) {
      const phone = `+44770090${String(1000 + cases.findIndex((c) => c[0] === name)).padStart(4, '0')}`;
      const path = `/quiet-${name}`;
      answers.set(path, answer);
      await setSmsUrl(h.ctx, accountId, NUMBER, receiver.url(path));
      await simulateInbound(h.ctx, { from: phone, to: NUMBER, message: name === 'stop' ? 'STOP' : 'hi' });
      await workers.drain();
      assert.equal(hits(path).length, 1, name);
      const sent = (await get(`/Messages.json?To=${encodeURIComponent(phone)}`)).json().messages as { body: string }[];
      // STOP gets Pigeon's own opt-out confirmation; the TwiML reply is refused.
      assert.deepEqual(sent.filter((m) => m.body === 'Sorry to see you go'), [], name);
      if (name !== 'stop') assert.equal(sent.length, 0, name);
    }
  });

  test('an account given an SMS URL before it had credentials gets them, to sign its posts', async () => {
    const other = await h.customer({ credits: 1 });
    assert.equal(await twilioAccountSid(h.ctx, other.accountId), null);
    await assignNumber(h.ctx, other.accountId, '+447700900556', undefined, receiver.url('/other'));
    const made = await twilioAccountSid(h.ctx, other.accountId);
    assert.match(made!.account_sid, /^AC[0-9a-f]{32}$/);
    assert.equal(made!.revealed, false);
  });

  test('failed authentications count toward the address limit shared with /v1', async () => {
    const wrong = `Basic ${Buffer.from(`${sid}:${'e'.repeat(32)}`).toString('base64')}`;
    const v1 = await h.request('GET', '/v1/account', { key: `pk_live_${'x'.repeat(32)}` });
    assert.equal(v1.statusCode, 401);
    const statuses: number[] = [];
    let last;
    for (let i = 0; i < 4; i++) {
      last = await get('/Messages.json', wrong);
      statuses.push(last.statusCode);
    }
    // With the request without credentials of an earlier test and the /v1 one, the fourth failure
    // reaches the limit of 4 (still answered as itself); the ones after it are refused.
    assert.deepEqual(statuses, [401, 401, 429, 429]);
    assert.equal(last!.json().code, 20429);
    assert.ok(Number(last!.headers['retry-after']) > 0);
    assert.equal((await get('/Messages.json')).statusCode, 200, 'good credentials still pass');
  });
});
