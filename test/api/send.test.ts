import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';

describe('POST /v1/sms/send', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  test('sends one message: the spec fields, the encoding, the debit', async () => {
    const { key } = await h.customer({ credits: 10 });
    const res = await h.request('POST', '/v1/sms/send', { key, body: { to: '+1 (415) 555-2671', from: 'acme', message: 'Hello there' } });
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.equal(body.status, 'success');
    assert.match(body.message_id, /^msg_/);
    assert.equal(body.to, '+1 (415) 555-2671', 'to is echoed exactly as given');
    assert.equal(body.from, 'Acme', 'from carries the registered spelling');
    assert.equal(body.segments, 1);
    assert.equal(body.encoding, 'GSM-7');
    assert.equal(body.credits_used, 1);
    assert.equal(body.credits_remaining, 9);

    const report = await h.request('GET', `/v1/sms/delivery-reports?message_id=${body.message_id}`, { key });
    const [row] = report.json().data;
    assert.equal(row.to, '+14155552671', 'reports carry the normalised E.164 number');
    assert.equal(row.status, 'pending');
    assert.equal(row.sent_at, null);
    assert.equal(row.delivered_at, null);
  });

  test('a long GSM message costs one credit per 153-character segment; UCS-2 per 67', async () => {
    const { key } = await h.customer({ credits: 10 });
    const long = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'a'.repeat(307) } });
    assert.equal(long.json().segments, 3);
    assert.equal(long.json().credits_used, 3);
    const unicode = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'ç'.repeat(71) } });
    assert.equal(unicode.json().encoding, 'UCS-2');
    assert.equal(unicode.json().segments, 2);
    assert.equal(unicode.json().credits_remaining, 10 - 3 - 2);
  });

  for (const to of ['14155552671', '+1415555', '+0123456789', '+1 415 555 2671 ext', '', '+999123456789', '00447911123456']) {
    test(`invalid_recipient for ${JSON.stringify(to)}`, async () => {
      const { key, accountId } = await h.customer({ credits: 5 });
      const res = await h.request('POST', '/v1/sms/send', { key, body: { to, from: 'Acme', message: 'hi' } });
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().code, 'invalid_recipient');
      assert.equal(res.json().status, 'error');
      assert.equal(res.json().docs_url, 'https://pigeon.test/docs/errors#invalid_recipient');
      const account = await h.request('GET', '/v1/account', { key });
      assert.equal(account.json().data.credits_remaining, 5, `nothing debited for ${accountId}`);
    });
  }

  test('invalid_sender_id for an unregistered, a pending and a rejected Sender ID', async () => {
    const { key, accountId } = await h.customer({ credits: 5 });
    const { registerSenderId, rejectSenderId } = await import('../../src/services/sender-ids/sender-ids.ts');
    await registerSenderId(h.ctx, accountId, 'Waiting');
    const rejected = await registerSenderId(h.ctx, accountId, 'Nope');
    await rejectSenderId(h.ctx, rejected.id, 'Does not match the brand');
    for (const from of ['Unknown', 'Waiting', 'Nope']) {
      const res = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from, message: 'hi' } });
      assert.equal(res.statusCode, 400, from);
      assert.equal(res.json().code, 'invalid_sender_id', from);
    }
  });

  test("another account's approved Sender ID cannot be used", async () => {
    await h.customer({ sender: 'Brandx' });
    const { key } = await h.customer({ sender: null });
    const res = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Brandx', message: 'hi' } });
    assert.equal(res.json().code, 'invalid_sender_id');
  });

  test('invalid_message for an empty body and for more than 1,600 characters', async () => {
    const { key } = await h.customer({ credits: 50 });
    for (const message of ['', 'x'.repeat(1601)]) {
      const res = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message } });
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().code, 'invalid_message');
    }
    const ok = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'x'.repeat(1600) } });
    assert.equal(ok.statusCode, 200);
    assert.equal(ok.json().segments, 11);
  });

  test('invalid_callback_url unless an absolute https:// URL', async () => {
    const { key } = await h.customer();
    for (const callback_url of ['http://example.com/hook', '/hook', 'example.com', 'ftp://example.com', 'https://user:pw@example.com/']) {
      const res = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'hi', callback_url } });
      assert.equal(res.statusCode, 400, callback_url);
      assert.equal(res.json().code, 'invalid_callback_url', callback_url);
    }
    const ok = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'hi', callback_url: 'https://example.com/hook' } });
    assert.equal(ok.statusCode, 200);
  });

  test('insufficient_credits writes nothing', async () => {
    const { key } = await h.customer({ credits: 1 });
    const res = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'b'.repeat(200) } });
    assert.equal(res.statusCode, 422);
    assert.equal(res.json().code, 'insufficient_credits');
    const reports = await h.request('GET', '/v1/sms/delivery-reports', { key });
    assert.equal(reports.json().pagination.total, 0);
    const account = await h.request('GET', '/v1/account', { key });
    assert.equal(account.json().data.credits_remaining, 1);
  });

  test('wrongly typed, missing or malformed input is invalid_request with the field named', async () => {
    const { key } = await h.customer();
    const typed = await h.request('POST', '/v1/sms/send', { key, body: { to: 447911123456, from: 'Acme', message: 'hi' } });
    assert.equal(typed.statusCode, 400);
    assert.equal(typed.json().code, 'invalid_request');
    assert.equal(typed.json().details[0].field, 'to');
    const missing = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme' } });
    assert.equal(missing.json().code, 'invalid_request');
    assert.equal(missing.json().details[0].field, 'message');
    const notObject = await h.request('POST', '/v1/sms/send', { key, body: [1, 2] });
    assert.equal(notObject.json().code, 'invalid_request');
    const malformed = await h.app.inject({
      method: 'POST',
      url: '/v1/sms/send',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      payload: '{"to": "+447911123456",',
    });
    assert.equal(malformed.statusCode, 400);
    assert.equal(malformed.json().code, 'invalid_request');
    const empty = await h.app.inject({ method: 'POST', url: '/v1/sms/send', headers: { authorization: `Bearer ${key}` } });
    assert.equal(empty.statusCode, 400);
    assert.equal(empty.json().code, 'invalid_request');
  });

  test('415 for a body that is not JSON, 413 for a body over the limit', async () => {
    const { key } = await h.customer();
    const text = await h.app.inject({
      method: 'POST',
      url: '/v1/sms/send',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'text/plain' },
      payload: 'to=+447911123456',
    });
    assert.equal(text.statusCode, 415);
    assert.equal(text.json().code, 'unsupported_media_type');
    const form = await h.app.inject({
      method: 'POST',
      url: '/v1/sms/send',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'to=%2B447911123456',
    });
    assert.equal(form.statusCode, 415);
    const small = await harness({ BODY_LIMIT_BYTES: '1024' });
    try {
      const c = await small.customer();
      const big = await small.request('POST', '/v1/sms/send', { key: c.key, body: { to: '+447911123456', from: 'Acme', message: 'x'.repeat(2000) } });
      assert.equal(big.statusCode, 413);
      assert.equal(big.json().code, 'payload_too_large');
    } finally {
      await small.close();
    }
  });
});
