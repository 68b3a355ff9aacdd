import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';

describe('POST /v1/sms/bulk', () => {
  let h: Harness;
  before(async () => {
    h = await harness({ BULK_MAX_MESSAGES: '50' });
  });
  after(() => h.close());

  test('queues the valid entries, skips the invalid ones with an errors array', async () => {
    const { key } = await h.customer({ credits: 100 });
    const res = await h.request('POST', '/v1/sms/bulk', {
      key,
      body: {
        from: 'Acme',
        messages: [
          { to: '+447911123456', message: 'Hello Ann' },
          { to: 'not-a-number', message: 'Hello Bob' },
          { to: '+14155552671', message: 'x'.repeat(161) },
          { to: '+447911123457', message: '' },
          { to: '+254 712 345 678', message: 'Habari 😀' },
        ],
      },
    });
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.equal(body.status, 'success');
    assert.match(body.batch_id, /^bat_/);
    assert.equal(body.total, 5);
    assert.equal(body.queued, 3);
    assert.equal(body.credits_used, 1 + 2 + 1);
    assert.equal(body.credits_remaining, 96);
    assert.deepEqual(
      body.errors.map((e: { index: number; code: string; to: string }) => [e.index, e.code, e.to]),
      [
        [1, 'invalid_recipient', 'not-a-number'],
        [3, 'invalid_message', '+447911123457'],
      ],
    );
    assert.deepEqual(
      body.messages.map((m: { index: number; to: string; segments: number; encoding: string }) => [m.index, m.to, m.segments, m.encoding]),
      [
        [0, '+447911123456', 1, 'GSM-7'],
        [2, '+14155552671', 2, 'GSM-7'],
        [4, '+254 712 345 678', 1, 'UCS-2'],
      ],
    );
    const reports = await h.request('GET', `/v1/sms/delivery-reports?batch_id=${body.batch_id}`, { key });
    assert.equal(reports.json().pagination.total, 3);
    const ids = new Set(body.messages.map((m: { message_id: string }) => m.message_id));
    for (const r of reports.json().data) assert.ok(ids.has(r.message_id));
  });

  test('all-or-nothing on credits: 422 and nothing queued when the valid entries cost more than the balance', async () => {
    const { key } = await h.customer({ credits: 3 });
    const res = await h.request('POST', '/v1/sms/bulk', {
      key,
      body: { from: 'Acme', messages: Array.from({ length: 4 }, (_, i) => ({ to: `+4479111234${50 + i}`, message: 'hi' })) },
    });
    assert.equal(res.statusCode, 422);
    assert.equal(res.json().code, 'insufficient_credits');
    const reports = await h.request('GET', '/v1/sms/delivery-reports', { key });
    assert.equal(reports.json().pagination.total, 0);
    assert.equal((await h.request('GET', '/v1/account', { key })).json().data.credits_remaining, 3);
  });

  test('a batch whose every entry is invalid is 200 with queued 0 and nothing debited', async () => {
    const { key } = await h.customer({ credits: 3 });
    const res = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', messages: [{ to: 'x', message: 'hi' }, { to: '+447911123456', message: '' }] } });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().queued, 0);
    assert.equal(res.json().credits_used, 0);
    assert.equal(res.json().credits_remaining, 3);
    assert.equal(res.json().errors.length, 2);
  });

  test('too_many_messages above BULK_MAX_MESSAGES; exactly the maximum is accepted', async () => {
    const { key } = await h.customer({ credits: 1000 });
    const messages = (n: number) => Array.from({ length: n }, (_, i) => ({ to: `+44791112${String(i).padStart(4, '0')}`, message: `hi ${i}` }));
    const over = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', messages: messages(51) } });
    assert.equal(over.statusCode, 400);
    assert.equal(over.json().code, 'too_many_messages');
    const max = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', messages: messages(50) } });
    assert.equal(max.statusCode, 200);
    assert.equal(max.json().queued, 50);
  });

  test('the whole request is refused for a bad Sender ID, a bad callback_url, or a malformed shape', async () => {
    const { key } = await h.customer({ credits: 10 });
    const one = [{ to: '+447911123456', message: 'hi' }];
    const sender = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Nobody', messages: one } });
    assert.equal(sender.json().code, 'invalid_sender_id');
    const callback = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', messages: one, callback_url: 'http://x.test' } });
    assert.equal(callback.json().code, 'invalid_callback_url');
    const shape = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', messages: [{ to: 123, message: 'hi' }] } });
    assert.equal(shape.json().code, 'invalid_request');
    assert.equal(shape.json().details[0].field, 'messages[0].to');
    const empty = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', messages: [] } });
    assert.equal(empty.json().code, 'invalid_request');
    assert.equal((await h.request('GET', '/v1/account', { key })).json().data.credits_remaining, 10);
  });
});
