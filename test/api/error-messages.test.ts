import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';
import { DashboardClient } from '../helpers/dashboard-client.ts';

/** Error messages a person can act on: one line per field, the allowed values, the numbers. */
describe('readable error messages', () => {
  let h: Harness;
  before(async () => {
    h = await harness({ BODY_LIMIT_BYTES: '2048' });
  });
  after(() => h.close());

  test('an unknown delivery-report status names the allowed values once', async () => {
    const { key } = await h.customer();
    const res = await h.request('GET', '/v1/sms/delivery-reports?status=bogus', { key });
    assert.equal(res.statusCode, 400);
    const body = res.json();
    assert.equal(body.code, 'invalid_request');
    assert.deepEqual(body.details, [{ field: 'status', code: 'invalid_request', message: 'must be one of: scheduled, pending, sent, delivered, failed, canceled' }]);
    assert.equal(body.message, 'The request is invalid: status must be one of: scheduled, pending, sent, delivered, failed, canceled.');
    assert.doesNotMatch(res.body, /equal to constant|anyOf/);
  });

  test('the webhook events filter too, and numeric limits in words', async () => {
    const { key } = await h.customer();
    const events = (await h.request('GET', '/v1/webhooks/events?status=nope', { key })).json();
    assert.deepEqual(events.details, [{ field: 'status', code: 'invalid_request', message: 'must be one of: pending, delivered, undelivered' }]);
    const limit = (await h.request('GET', '/v1/sms/delivery-reports?limit=500', { key })).json();
    assert.deepEqual(limit.details, [{ field: 'limit', code: 'invalid_request', message: 'must be at most 200' }]);
    const missing = (await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme' } })).json();
    assert.deepEqual(missing.details, [{ field: 'message', code: 'invalid_request', message: 'is required' }]);
  });

  test('insufficient_credits gives the cost and the balance, single and bulk', async () => {
    const { key } = await h.customer({ credits: 2 });
    const single = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'x'.repeat(161) } });
    assert.equal(single.statusCode, 200, 'two segments, two credits');
    const again = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'x'.repeat(161) } });
    assert.equal(again.statusCode, 422);
    assert.match(again.json().message, /^Sending needs 2 credits; the balance is 0 credits\./);

    const some = await h.customer({ credits: 3 });
    const bulk = await h.request('POST', '/v1/sms/bulk', {
      key: some.key,
      body: { from: 'Acme', messages: Array.from({ length: 5 }, (_, i) => ({ to: `+44791112345${i}`, message: 'hi' })) },
    });
    assert.equal(bulk.statusCode, 422);
    assert.equal(bulk.json().code, 'insufficient_credits');
    assert.match(bulk.json().message, /^Sending needs 5 credits; the balance is 3 credits\. Ask the operator for a top-up/);
  });

  test('a new account with 0 credits is told what to do next', async () => {
    const { key, accountId } = await h.customer({ credits: 0 });
    const res = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'first' } });
    assert.equal(res.statusCode, 422);
    const message: string = res.json().message;
    assert.match(message, /the balance is 0 credits/);
    assert.ok(message.includes(`pigeon credits add ${accountId} AMOUNT`), message);
  });

  test('payload_too_large names the limit', async () => {
    const { key } = await h.customer();
    const res = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'x'.repeat(4000) } });
    assert.equal(res.statusCode, 413);
    assert.equal(res.json().code, 'payload_too_large');
    assert.match(res.json().message, /limit of 2,048 bytes/);
  });

  test('an unknown scope on a new key is one message listing the scopes there are', async () => {
    const client = new DashboardClient(h.app);
    const form = await client.get('/dashboard/signup');
    await client.post('/dashboard/signup', { name: 'Scopes', email: 'scopes@example.com', password: 'a long enough password' }, form.body);
    const page = await client.get('/dashboard/settings/api-keys');
    const nonce = /name="nonce" value="([^"]+)"/.exec(page.body)![1]!;
    const res = await client.post('/dashboard/settings/api-keys', { label: 'x', scopes: ['sms:send', 'bogus'], nonce }, page.body);
    assert.equal(res.statusCode, 400);
    assert.match(res.body, /Unknown scope &quot;bogus&quot;; scopes are sms:send, sender_ids:read, sender_ids:write, reports:read, account:read, account:write, numbers:read, inbound:read, opt_outs:read, opt_outs:write\./);
    assert.equal(res.body.match(/Unknown scope/g)?.length, 1);
  });
});
