import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';

function value(text: string, metric: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${metric} `));
  return line ? Number(line.split(' ').at(-1)) : NaN;
}

describe('GET /metrics', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  test('requests by route and status, messages by status, queue depth, credits, carrier submits', async () => {
    const { key } = await h.customer({ credits: 50 });
    await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'hi' } });
    await h.request('POST', '/v1/sms/send', { key, body: { to: 'nope', from: 'Acme', message: 'hi' } });
    const before = (await h.request('GET', '/metrics')).body;
    assert.equal(value(before, 'pigeon_queue_depth{queue="dispatch"}'), 1);
    await h.workers.drain();
    const res = await h.request('GET', '/metrics');
    assert.equal(res.statusCode, 200);
    assert.match(res.headers['content-type'] as string, /text\/plain/);
    const text = res.body;
    assert.ok(value(text, 'pigeon_http_requests_total{method="POST",route="/v1/sms/send",status="200"}') >= 1);
    assert.ok(value(text, 'pigeon_http_requests_total{method="POST",route="/v1/sms/send",status="400"}') >= 1);
    assert.match(text, /pigeon_http_request_duration_seconds_bucket\{le="0.005",method="POST",route="\/v1\/sms\/send"\}/);
    assert.ok(value(text, 'pigeon_messages_total{status="sent"}') >= 1);
    assert.ok(value(text, 'pigeon_credits_debited_total') >= 1);
    assert.ok(value(text, 'pigeon_carrier_submits_total{carrier="simulator",outcome="accepted"}') >= 1);
    assert.equal(value(text, 'pigeon_queue_depth{queue="dispatch"}'), 0);
    assert.equal(value(text, 'pigeon_queue_depth{queue="receipt"}'), 1, 'the receipt waits for its due time');
    assert.ok(value(text, 'pigeon_queue_oldest_age_seconds{queue="receipt"}') >= 0);
  });

  test('METRICS_TOKEN protects the endpoint', async () => {
    const guarded = await harness({ METRICS_TOKEN: 's3cret' });
    try {
      assert.equal((await guarded.request('GET', '/metrics')).statusCode, 401);
      assert.equal((await guarded.request('GET', '/metrics', { headers: { authorization: 'Bearer s3cret' } })).statusCode, 200);
    } finally {
      await guarded.close();
    }
  });
});
