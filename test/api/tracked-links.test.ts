/**
 * Tracked links (DECISIONS.md §16) through the HTTP interface: `track_links` on sends and bulks
 * and `ShortenUrls` on the Twilio surface (texts rewritten, priced as rewritten, links stored),
 * the public redirect `GET|HEAD /l/<code>` (expiry, fallback, bots, rate limit), the
 * `sms.link_clicked` event delivered signed to a real HTTPS receiver, and `GET /v1/sms/links`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { createWorkers, type Workers } from '../../src/workers/workers.ts';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.ts';
import { getAccount } from '../../src/services/accounts/accounts.ts';
import { verifyWebhookSignature } from '../../src/domain/webhook-signature.ts';
import { twilioCredentials } from '../../src/services/twilio/credentials.ts';
import { runPurge } from '../../src/services/retention/purge.ts';
import { setAccountRetention } from '../../src/services/retention/account-retention.ts';
import { makeTestCa, startReceiver, type Receiver, type TestCa } from './webhooks-receiver.ts';

const BASE = 'https://127.0.0.1:8443/l';
const PHONE = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1';
/** A URL of 164 characters: a text with it is 2 segments, with its short link 1. */
const LONG_URL = `https://127.0.0.1/spring-sale?utm=${'a'.repeat(130)}`;
const SHORT = new RegExp(`${BASE.replace(/[.]/g, '\\.')}/([0-9A-Za-z]{8})`, 'g');

describe('tracked links', () => {
  let ca: TestCa;
  let receiver: Receiver;
  let h: Harness;
  let workers: Workers;
  let key: string;
  let accountId: string;

  before(async () => {
    ca = makeTestCa();
    receiver = await startReceiver(ca, () => ({ status: 200 }));
    h = await harness({ LINK_BASE_URL: `${BASE}/`, PUBLIC_URL: 'https://127.0.0.1:8443', WEBHOOK_ALLOW_PRIVATE: 'true', LINK_RATE_LIMIT_MAX: '1000' });
    workers = createWorkers(h.ctx, h.carrier, { webhook: { dispatcher: new WebhookDispatcher({ timeoutMs: 2000, allowPrivate: true, ca: ca.ca }) } });
    ({ key, accountId } = await h.customer({ credits: 1000 }));
  });
  after(async () => {
    await workers.stop();
    await h.close();
    await receiver.close();
    ca.cleanup();
  });

  const body = (id: string) => h.ctx.store.db.selectFrom('messages').select('body').where('id', '=', id).executeTakeFirstOrThrow().then((r) => r.body);
  const linksOf = (id: string) => h.ctx.store.db.selectFrom('links').selectAll().where('message_id', '=', id).orderBy('code').execute();
  const codesIn = (text: string) => [...text.matchAll(SHORT)].map((m) => m[1]!);
  const follow = (code: string, opts: { method?: 'GET' | 'HEAD'; ua?: string | null } = {}) =>
    h.app.inject({ method: opts.method ?? 'GET', url: `/l/${code}`, headers: { 'user-agent': opts.ua === null ? '' : (opts.ua ?? PHONE) } });
  const clicksOf = async (code: string) => {
    const row = await h.ctx.store.db.selectFrom('links').select(['clicks', 'bot_clicks', 'first_clicked_at']).where('code', '=', code).executeTakeFirstOrThrow();
    return { clicks: Number(row.clicks), bots: Number(row.bot_clicks), first: row.first_clicked_at === null ? null : Number(row.first_clicked_at) };
  };

  test('a send rewrites every URL to its own short link, is priced on the rewritten text, and stores the links', async () => {
    const text = `Spring sale: ${LONG_URL}. Menu (http://127.0.0.1:8080/menu), no link in 127.0.0.1/x.`;
    const quote = (await h.request('POST', '/v1/sms/quote', { key, body: { to: '+447911123456', from: 'Acme', message: text } })).json().data;
    assert.equal(quote.segments, 2, 'as written the text is two segments');
    const quoted = (await h.request('POST', '/v1/sms/quote', { key, body: { to: '+447911123456', from: 'Acme', message: text, track_links: true } })).json().data;
    assert.equal(quoted.segments, 1, 'the quote counts the shortened text');
    const before = (await h.request('GET', '/v1/account', { key })).json().data.credits_remaining;
    const res = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: text, track_links: true } });
    assert.equal(res.statusCode, 200, res.body);
    const sent = res.json();
    assert.equal(sent.segments, 1);
    assert.equal(sent.credits_used, quoted.credits);
    assert.equal(sent.credits_remaining, before - quoted.credits);
    const stored = await body(sent.message_id);
    const codes = codesIn(stored);
    assert.equal(codes.length, 2);
    assert.notEqual(codes[0], codes[1]);
    assert.equal(stored, `Spring sale: ${BASE}/${codes[0]}. Menu (${BASE}/${codes[1]}), no link in 127.0.0.1/x.`);
    const links = await linksOf(sent.message_id);
    assert.deepEqual(
      links.map((l) => ({ code: l.code, url: l.url, account: l.account_id, batch: l.batch_id, clicks: Number(l.clicks) })).sort((a, b) => codes.indexOf(a.code) - codes.indexOf(b.code)),
      [
        { code: codes[0], url: LONG_URL, account: accountId, batch: null, clicks: 0 },
        { code: codes[1], url: 'http://127.0.0.1:8080/menu', account: accountId, batch: null, clicks: 0 },
      ],
    );
  });

  test('without track_links the text goes as written and no link is stored', async () => {
    const sent = (await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: `See ${LONG_URL}` } })).json();
    assert.equal(await body(sent.message_id), `See ${LONG_URL}`);
    assert.equal(sent.segments, 2);
    assert.deepEqual(await linksOf(sent.message_id), []);
  });

  test('a bulk gives each recipient their own codes; an entry with too many links is that entry\'s error', async () => {
    const many = Array.from({ length: 11 }, (_, i) => `http://127.0.0.1/${i}`).join(' ');
    const res = await h.request('POST', '/v1/sms/bulk', {
      key,
      body: {
        from: 'Acme',
        track_links: true,
        messages: [
          { to: '+447911123456', message: 'Hi Ann: https://127.0.0.1/offer' },
          { to: '+447911123457', message: 'Hi Bob: https://127.0.0.1/offer' },
          { to: '+447911123458', message: many },
        ],
      },
    });
    assert.equal(res.statusCode, 200, res.body);
    const bulk = res.json();
    assert.equal(bulk.queued, 2);
    assert.deepEqual(bulk.errors.map((e: { index: number; code: string }) => [e.index, e.code]), [[2, 'invalid_message']]);
    const [a, b] = await Promise.all(bulk.messages.map((m: { message_id: string }) => body(m.message_id)));
    const [ca1, cb1] = [codesIn(a!)[0], codesIn(b!)[0]];
    assert.ok(ca1 && cb1 && ca1 !== cb1, 'one code per recipient');
    const rows = await h.ctx.store.db.selectFrom('links').selectAll().where('batch_id', '=', bulk.batch_id).execute();
    assert.deepEqual(rows.map((r) => r.url), ['https://127.0.0.1/offer', 'https://127.0.0.1/offer']);
  });

  test('a single send with more than 10 links is refused with invalid_message, nothing debited', async () => {
    const before = (await h.request('GET', '/v1/account', { key })).json().data.credits_remaining;
    const many = Array.from({ length: 11 }, (_, i) => `http://127.0.0.1/${i}`).join(' ');
    const res = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: many, track_links: true } });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, 'invalid_message');
    assert.equal((await h.request('GET', '/v1/account', { key })).json().data.credits_remaining, before);
  });

  test('ShortenUrls=true on Twilio\'s Messages.json tracks the links; num_segments counts the short text', async () => {
    const { account_sid: sid, auth_token: token } = await twilioCredentials(h.ctx, accountId);
    const post = (params: Record<string, string>) =>
      h.app.inject({
        method: 'POST',
        url: `/2010-04-01/Accounts/${sid}/Messages.json`,
        headers: { authorization: `Basic ${Buffer.from(`${sid}:${token}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams(params).toString(),
      });
    const res = await post({ To: '+447911123456', From: 'Acme', Body: `Sale ${LONG_URL}`, ShortenUrls: 'true' });
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(res.json().num_segments, '1');
    assert.equal(codesIn(res.json().body).length, 1);
    const plain = await post({ To: '+447911123456', From: 'Acme', Body: `Sale ${LONG_URL}`, ShortenUrls: 'false' });
    assert.equal(plain.json().body, `Sale ${LONG_URL}`);
    assert.equal((await post({ To: '+447911123456', From: 'Acme', Body: 'x', ShortenUrls: 'yes' })).json().code, 20001);
  });

  test('GET /l/<code>: 302 to the URL; HEAD and previews redirected but not counted; the first click raises a signed sms.link_clicked', async () => {
    const callback = receiver.url('/clicks');
    const sent = (await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'Go https://127.0.0.1/go?a=1', track_links: true, callback_url: callback } })).json();
    const [code] = codesIn(await body(sent.message_id));
    const head = await follow(code!, { method: 'HEAD' });
    assert.equal(head.statusCode, 302);
    assert.equal(head.headers.location, 'https://127.0.0.1/go?a=1');
    for (const ua of ['WhatsApp/2.23.20.0 A', 'facebookexternalhit/1.1', null]) {
      const res = await follow(code!, { ua });
      assert.equal(res.statusCode, 302);
      assert.equal(res.headers.location, 'https://127.0.0.1/go?a=1');
    }
    await waitFor(async () => (await clicksOf(code!)).bots === 4, { message: 'four bot fetches recorded' });
    assert.deepEqual(await clicksOf(code!), { clicks: 0, bots: 4, first: null });

    const clickedAt = h.clock.now();
    const click = await follow(code!);
    assert.equal(click.statusCode, 302);
    assert.equal(click.headers.location, 'https://127.0.0.1/go?a=1');
    assert.equal(click.headers['cache-control'], 'no-store');
    await waitFor(async () => (await clicksOf(code!)).clicks === 1, { message: 'the click recorded' });
    h.clock.advance(1000);
    await follow(code!);
    await waitFor(async () => (await clicksOf(code!)).clicks === 2, { message: 'the second click recorded' });
    assert.deepEqual(await clicksOf(code!), { clicks: 2, bots: 4, first: clickedAt });
    const recorded = await h.ctx.store.db.selectFrom('link_clicks').selectAll().where('code', '=', code!).orderBy('clicked_at').execute();
    assert.equal(recorded.length, 6);
    assert.deepEqual(recorded.filter((r) => Number(r.bot) === 0).map((r) => r.user_agent), [PHONE, PHONE]);
    assert.deepEqual(Object.keys(recorded[0]!).sort(), ['bot', 'clicked_at', 'code', 'user_agent'], 'no address kept');

    const events = await h.ctx.store.db.selectFrom('webhook_events').selectAll().where('message_id', '=', sent.message_id).where('event', '=', 'sms.link_clicked').execute();
    assert.equal(events.length, 1, 'only the first counted click raises the event');
    await workers.drain();
    const hit = await waitFor(() => receiver.received.find((r) => r.path === '/clicks' && r.body.includes('sms.link_clicked')));
    const payload = JSON.parse(hit.body);
    assert.deepEqual(Object.keys(payload), ['event', 'message_id', 'batch_id', 'to', 'url', 'clicked_at', 'user_agent', 'timestamp']);
    assert.deepEqual(payload, {
      event: 'sms.link_clicked',
      message_id: sent.message_id,
      batch_id: null,
      to: '+447911123456',
      url: 'https://127.0.0.1/go?a=1',
      clicked_at: new Date(clickedAt).toISOString(),
      user_agent: PHONE,
      timestamp: new Date(clickedAt).toISOString(),
    });
    assert.equal(hit.headers['x-pigeon-event-id'], events[0]!.id);
    const secret = (await getAccount(h.ctx, accountId)).webhook_secret;
    assert.equal(verifyWebhookSignature(hit.body, String(hit.headers['x-pigeon-signature']), secret, { nowSeconds: Math.floor(h.clock.now() / 1000) }), true);
  });

  test('without a callback URL the click event goes to the account\'s events URL; without either, none is raised', async () => {
    const other = await h.customer({ credits: 10 });
    const send = async () => {
      const sent = (await h.request('POST', '/v1/sms/send', { key: other.key, body: { to: '+447911123456', from: 'Acme', message: 'https://127.0.0.1/a', track_links: true } })).json();
      return { id: sent.message_id as string, code: codesIn(await body(sent.message_id))[0]! };
    };
    const silent = await send();
    await follow(silent.code);
    await waitFor(async () => (await clicksOf(silent.code)).clicks === 1);
    assert.equal((await h.ctx.store.db.selectFrom('webhook_events').select('id').where('message_id', '=', silent.id).execute()).length, 0);

    const set = await h.request('PUT', '/v1/account/events-url', { key: other.key, body: { url: receiver.url('/account-events') } });
    assert.equal(set.statusCode, 200, set.body);
    const heard = await send();
    await follow(heard.code);
    await waitFor(async () => (await clicksOf(heard.code)).clicks === 1);
    const [event] = await h.ctx.store.db.selectFrom('webhook_events').selectAll().where('message_id', '=', heard.id).execute();
    assert.equal(event!.event, 'sms.link_clicked');
    assert.equal(event!.url, receiver.url('/account-events'));
  });

  test('an unknown code, a malformed one and a link past LINK_TTL_DAYS are a 404 page, or go to LINK_FALLBACK_URL', async () => {
    const sent = (await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'https://127.0.0.1/old', track_links: true } })).json();
    const [code] = codesIn(await body(sent.message_id));
    for (const path of ['ZZZZZZZZ', 'short', 'a'.repeat(64), '%E2%82%AC%E2%82%AC%E2%82%AC%E2%82%AC']) {
      const res = await follow(path);
      assert.equal(res.statusCode, 404, path);
      assert.match(String(res.headers['content-type']), /^text\/html/);
      assert.match(res.body, /expired or does not exist/);
    }
    h.clock.advance(89 * 86_400_000);
    assert.equal((await follow(code!)).statusCode, 302, 'still good within 90 days');
    h.clock.advance(2 * 86_400_000);
    assert.equal((await follow(code!)).statusCode, 404, 'expired after 90 days');
    h.config.links.fallbackUrl = 'https://127.0.0.1/expired';
    try {
      for (const c of [code!, 'ZZZZZZZZ']) {
        const res = await follow(c);
        assert.equal(res.statusCode, 302);
        assert.equal(res.headers.location, 'https://127.0.0.1/expired');
      }
    } finally {
      h.config.links.fallbackUrl = null;
    }
    await waitFor(async () => (await clicksOf(code!)).clicks === 1);
    assert.equal((await clicksOf(code!)).clicks, 1, 'an expired link counts nothing');
  });

  test('GET /v1/sms/links lists a message\'s or a batch\'s links with their clicks, paged, for the account only', async () => {
    const res = await h.request('POST', '/v1/sms/bulk', {
      key,
      body: { from: 'Acme', track_links: true, messages: [1, 2, 3].map((i) => ({ to: `+44791112345${i}`, message: `https://127.0.0.1/p/${i} and https://127.0.0.1/q` })) },
    });
    const bulk = res.json();
    const first = bulk.messages[0].message_id as string;
    const [code] = codesIn(await body(first));
    h.clock.advance(1000);
    const clickedAt = h.clock.now();
    await follow(code!);
    await waitFor(async () => (await clicksOf(code!)).clicks === 1);

    const one = await h.request('GET', `/v1/sms/links?message_id=${first}`, { key });
    assert.equal(one.statusCode, 200, one.body);
    assert.deepEqual(one.json().pagination, { page: 1, limit: 50, total: 2 });
    const clicked = one.json().data.find((l: { short_url: string }) => l.short_url === `${BASE}/${code}`);
    assert.deepEqual(clicked, { message_id: first, url: 'https://127.0.0.1/p/1', short_url: `${BASE}/${code}`, clicks: 1, first_clicked_at: new Date(clickedAt).toISOString() });
    const unclicked = one.json().data.find((l: { short_url: string }) => l.short_url !== `${BASE}/${code}`);
    assert.deepEqual(Object.keys(unclicked), ['message_id', 'url', 'short_url', 'clicks', 'first_clicked_at']);
    assert.equal(unclicked.first_clicked_at, null);

    const page2 = (await h.request('GET', `/v1/sms/links?batch_id=${bulk.batch_id}&limit=4&page=2`, { key })).json();
    assert.deepEqual(page2.pagination, { page: 2, limit: 4, total: 6 });
    assert.equal(page2.data.length, 2);

    const stranger = await h.customer({ credits: 1 });
    assert.deepEqual((await h.request('GET', `/v1/sms/links?batch_id=${bulk.batch_id}`, { key: stranger.key })).json().data, []);
    for (const q of ['', `?message_id=${first}&batch_id=${bulk.batch_id}`]) {
      const bad = await h.request('GET', `/v1/sms/links${q}`, { key });
      assert.equal(bad.statusCode, 400);
      assert.equal(bad.json().code, 'invalid_request');
    }
    const sendOnly = await h.customer({ credits: 1, scopes: 'sms:send' });
    assert.equal((await h.request('GET', `/v1/sms/links?message_id=${first}`, { key: sendOnly.key })).statusCode, 403);
  });

  test('the redirect is rate-limited per address: past LINK_RATE_LIMIT_MAX a 429 with Retry-After', async () => {
    const sent = (await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'https://127.0.0.1/r', track_links: true } })).json();
    const [code] = codesIn(await body(sent.message_id));
    const limit = h.config.links.rateLimit;
    const saved = limit.max;
    limit.max = 3;
    try {
      h.clock.advance(limit.windowMs);
      const answers = [];
      for (let i = 0; i < 4; i++) answers.push((await follow(code!, { ua: 'curl/8' })).statusCode);
      assert.deepEqual(answers, [302, 302, 302, 429]);
      const refused = await follow(code!);
      assert.equal(refused.json().code, 'rate_limit_exceeded');
      assert.ok(Number(refused.headers['retry-after']) > 0);
      h.clock.advance(limit.windowMs);
      assert.equal((await follow(code!)).statusCode, 302, 'a new window');
    } finally {
      limit.max = saved;
      h.clock.advance(limit.windowMs);
    }
  });

  /** A tracked send whose one link was clicked once, then delivered (final). */
  async function clickedAndDelivered(apiKey: string, fields: { message: string; callback_url?: string }) {
    const sent = (await h.request('POST', '/v1/sms/send', { key: apiKey, body: { to: '+447911123456', from: 'Acme', track_links: true, ...fields } })).json();
    const [code] = codesIn(await body(sent.message_id));
    await follow(code!);
    await waitFor(async () => (await clicksOf(code!)).clicks === 1);
    await workers.drain();
    h.clock.advance(2000);
    await workers.drain();
    return { sent, code: code! };
  }

  test('retention deletes a message\'s links and clicks with it; the link then answers 404', async () => {
    const gone = await h.customer({ credits: 10 });
    const kept = (await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'https://127.0.0.1/kept', track_links: true } })).json();
    const { sent, code } = await clickedAndDelivered(gone.key, { message: 'https://127.0.0.1/gone' });
    await setAccountRetention(h.ctx, gone.accountId, { messageDays: 0 });
    await runPurge(h.ctx);
    assert.deepEqual(await linksOf(sent.message_id), []);
    assert.deepEqual(await h.ctx.store.db.selectFrom('link_clicks').select('code').where('code', '=', code).execute(), []);
    assert.equal((await follow(code)).statusCode, 404);
    assert.equal((await linksOf(kept.message_id)).length, 1, 'another account\'s links stay');
  });

  test('redaction removes a message\'s links with its text: the link stops redirecting, the click event loses its URL', async () => {
    const { sent, code } = await clickedAndDelivered(key, { message: 'Private: https://127.0.0.1/p?token=abc', callback_url: receiver.url('/redacted') });
    const redacted = await h.request('POST', `/v1/sms/${sent.message_id}/redact`, { key });
    assert.equal(redacted.statusCode, 200, redacted.body);
    assert.deepEqual(await linksOf(sent.message_id), []);
    assert.equal((await follow(code!)).statusCode, 404);
    assert.deepEqual((await h.request('GET', `/v1/sms/links?message_id=${sent.message_id}`, { key })).json().data, []);
    const [event] = await h.ctx.store.db.selectFrom('webhook_events').select('payload').where('message_id', '=', sent.message_id).where('event', '=', 'sms.link_clicked').execute();
    const payload = JSON.parse(event!.payload);
    assert.equal(payload.url, '');
    assert.equal(payload.to, '+44791112XXXX');
  });
});
