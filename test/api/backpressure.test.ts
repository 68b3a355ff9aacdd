import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';

describe('backpressure', () => {
  let h: Harness;
  before(async () => {
    h = await harness({ DISPATCH_BACKLOG_LIMIT: '5' });
  });
  after(() => h.close());

  test('over DISPATCH_BACKLOG_LIMIT waiting messages, sends get 503 with Retry-After and nothing is debited; the account sees its backlog', async () => {
    const { key } = await h.customer({ credits: 100 });
    const body = { to: '+447911123456', from: 'Acme', message: 'hi' };
    const bulk = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', messages: Array.from({ length: 5 }, () => body) } });
    assert.equal(bulk.statusCode, 200);
    assert.equal((await h.request('GET', '/v1/account', { key })).json().data.messages_pending, 5);

    h.clock.advance(1000); // the backlog is counted at most once a second
    const refused = await h.request('POST', '/v1/sms/send', { key, body });
    assert.equal(refused.statusCode, 503);
    assert.equal(refused.json().code, 'service_unavailable');
    assert.ok(Number(refused.headers['retry-after']) >= 1);
    const tooBig = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', messages: [body] } });
    assert.equal(tooBig.statusCode, 503);
    assert.equal((await h.request('GET', '/v1/account', { key })).json().data.credits_remaining, 95, 'nothing debited for the refused sends');
    const invalid = await h.request('POST', '/v1/sms/send', { key, body: { ...body, to: 'nope' } });
    assert.equal(invalid.statusCode, 400, 'a request that could never be accepted still gets its own error');

    await h.workers.drain();
    h.clock.advance(1000);
    const again = await h.request('POST', '/v1/sms/send', { key, body });
    assert.equal(again.statusCode, 200, 'accepted again once dispatch has caught up');
    assert.equal((await h.request('GET', '/v1/account', { key })).json().data.messages_pending, 1);
  });
});
