/**
 * Field length limits (DECISIONS.md §9): an over-long field is refused by the schema, before any
 * lookup, with that field's own code; in a bulk an over-long entry is that entry's error and the
 * rest are sent; only the top-level fields fail a whole bulk. The in-memory counters stay bounded
 * whatever keys a client makes them hold.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';
import { MemoryRateLimitStore } from '../../src/services/rate-limit/rate-limit.ts';

const SEND = { to: '+447911123456', from: 'Acme', message: 'hello' };

describe('field length limits', () => {
  let h: Harness;
  let key: string;
  before(async () => {
    h = await harness();
    ({ key } = await h.customer({ credits: 1000 }));
  });
  after(() => h.close());

  test('POST /v1/sms/send: each over-long field is 400 with its own code, naming the field and the limit', async () => {
    const cases: [Record<string, string>, string, string, string][] = [
      [{ from: 'A'.repeat(17) }, 'invalid_sender_id', 'from', '16'],
      [{ to: `+44${'7'.repeat(31)}` }, 'invalid_recipient', 'to', '32'],
      [{ callback_url: `https://localhost/${'a'.repeat(2048)}` }, 'invalid_callback_url', 'callback_url', '2,048'],
      [{ message: 'x'.repeat(1601) }, 'invalid_message', 'message', '1,600'],
    ];
    for (const [fields, code, field, limit] of cases) {
      const res = await h.request('POST', '/v1/sms/send', { key, body: { ...SEND, ...fields } });
      assert.equal(res.statusCode, 400, field);
      const body = res.json();
      assert.equal(body.code, code, field);
      assert.equal(body.status, 'error');
      assert.equal(body.docs_url, `https://pigeon.test/docs/errors#${code}`);
      assert.equal(body.details[0].field, field);
      assert.match(body.message, new RegExp(`${limit} characters`), field);
    }
    // At the limit is fine as far as length goes: an unknown 16-character Sender ID is the usual refusal.
    const unknown = await h.request('POST', '/v1/sms/send', { key, body: { ...SEND, from: 'B'.repeat(16) } });
    assert.equal(unknown.statusCode, 400);
    assert.equal(unknown.json().code, 'invalid_sender_id');
    assert.equal(unknown.json().details, undefined);
    assert.equal((await h.request('GET', '/v1/account', { key })).json().data.credits_remaining, 1000, 'nothing debited');
  });

  test('Idempotency-Key over 255 characters is 400 invalid_request; 255 is accepted', async () => {
    const long = await h.request('POST', '/v1/sms/send', { key, body: SEND, headers: { 'idempotency-key': 'k'.repeat(256) } });
    assert.equal(long.statusCode, 400);
    assert.equal(long.json().code, 'invalid_request');
    assert.equal(long.json().details[0].field, 'Idempotency-Key');
    const ok = await h.request('POST', '/v1/sms/send', { key, body: SEND, headers: { 'idempotency-key': 'k'.repeat(255) } });
    assert.equal(ok.statusCode, 200);
  });

  test('POST /v1/sms/sender-ids: a name over 11 characters is invalid_sender_id_name', async () => {
    const res = await h.request('POST', '/v1/sms/sender-ids', { key, body: { name: 'N'.repeat(100_000) } });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, 'invalid_sender_id_name');
  });

  test('bulk: an over-long entry is that entry’s error (its `to` echoed cut short); the others are sent', async () => {
    const longTo = `+44${'7'.repeat(100_000)}`;
    const res = await h.request('POST', '/v1/sms/bulk', {
      key,
      body: {
        from: 'Acme',
        messages: [
          { to: '+447911123456', message: 'first' },
          { to: longTo, message: 'second' },
          { to: '+447911123457', message: 'y'.repeat(100_000) },
          { to: '+447911123458', message: 'fourth' },
        ],
      },
    });
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.equal(body.total, 4);
    assert.equal(body.queued, 2);
    assert.deepEqual(
      body.errors.map((e: { index: number; code: string }) => [e.index, e.code]),
      [
        [1, 'invalid_recipient'],
        [2, 'invalid_message'],
      ],
    );
    assert.equal(body.errors[0].to, `${longTo.slice(0, 32)}…`);
    assert.ok(res.body.length < 2000, `the answer is small: ${res.body.length} bytes`);
  });

  test('bulk: an over-long top-level field fails the whole request, nothing debited', async () => {
    const before = (await h.request('GET', '/v1/account', { key })).json().data.credits_remaining;
    const messages = [{ to: '+447911123456', message: 'hi' }];
    for (const [fields, code] of [
      [{ from: 'A'.repeat(17) }, 'invalid_sender_id'],
      [{ callback_url: `https://localhost/${'a'.repeat(2048)}` }, 'invalid_callback_url'],
    ] as const) {
      const res = await h.request('POST', '/v1/sms/bulk', { key, body: Object.assign({ from: 'Acme', messages }, fields) });
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().code, code);
    }
    assert.equal((await h.request('GET', '/v1/account', { key })).json().data.credits_remaining, before);
  });
});

describe('large bodies read a few at a time', () => {
  let h: Harness;
  before(async () => {
    h = await harness({ BODY_LIMIT_BYTES: String(1024 * 1024) });
  });
  after(() => h.close());

  test('many more large bodies than the budget holds, at once and one after another, are all answered', async () => {
    const { key } = await h.customer();
    const body = { ...SEND, message: 'x'.repeat(900 * 1024) }; // 16 MiB of budget: 18 such bodies at once
    const answer = async () => {
      const res = await h.request('POST', '/v1/sms/send', { key, body });
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().code, 'invalid_message');
    };
    await Promise.all(Array.from({ length: 60 }, answer));
    for (let i = 0; i < 40; i++) await answer();
    assert.equal((await h.request('POST', '/v1/sms/send', { key, body: SEND })).statusCode, 200);
  });
});

describe('dashboard form fields', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  test('a form body over 64 KiB is refused before it reaches a service (413, a page)', async () => {
    for (const url of ['/dashboard/login', '/dashboard/signup', '/operator/login']) {
      const res = await h.app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `email=${'e'.repeat(70 * 1024)}%40example.com&password=x`,
      });
      assert.equal(res.statusCode, 413, url);
      assert.match(res.headers['content-type'] as string, /^text\/html/, url);
    }
  });
});

describe('bounded in-memory counters', () => {
  test('the rate-limit store keeps at most its number of windows and bytes of keys, oldest dropped first', async () => {
    const store = new MemoryRateLimitStore(100, 1024 * 1024);
    for (let i = 0; i < 1000; i++) await store.hit(`k${i}`, 60_000, 0);
    assert.equal(store.size, 100);
    assert.equal((await store.hit('k999', 60_000, 0)).count, 2, 'the newest windows are kept');
    assert.equal((await store.hit('k0', 60_000, 0)).count, 1, 'the oldest were dropped');
    const bytes = new MemoryRateLimitStore(1_000_000, 1024 * 1024);
    for (let i = 0; i < 20; i++) await bytes.hit(`${i}:${'x'.repeat(100_000)}`, 60_000, 0);
    assert.ok(bytes.size <= 6, `at most 1 MiB of keys: ${bytes.size} windows of 200 KB`);
  });
});
