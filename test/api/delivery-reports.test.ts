import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';

describe('GET /v1/sms/delivery-reports', () => {
  let h: Harness;
  let key: string;
  let batchId: string;
  let singleId: string;
  before(async () => {
    h = await harness();
    ({ key } = await h.customer({ credits: 1000 }));
    const single = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'single' } });
    singleId = single.json().message_id;
    h.clock.advance(10);
    const bulk = await h.request('POST', '/v1/sms/bulk', {
      key,
      body: {
        from: 'Acme',
        // 0000 fails, 1111 stays sent, 2222 is rejected at submit, the rest are delivered.
        messages: ['+447911120000', '+447911121111', '+447911122222', '+447911123333', '+447911124444'].map((to) => ({ to, message: 'campaign' })),
      },
    });
    batchId = bulk.json().batch_id;
    await h.workers.drain();
    h.clock.advance(1000);
    await h.workers.drain();
  });
  after(() => h.close());

  test('the spec fields, newest first', async () => {
    const res = await h.request('GET', '/v1/sms/delivery-reports', { key });
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.equal(body.status, 'success');
    assert.deepEqual(body.pagination, { page: 1, limit: 50, total: 6 });
    assert.equal(body.data.at(-1).message_id, singleId, 'the oldest message is last');
    for (const r of body.data) {
      for (const field of ['message_id', 'to', 'from', 'status', 'delivered_at', 'sent_at']) assert.ok(field in r, field);
    }
    const ids = body.data.map((r: { message_id: string }) => r.message_id);
    const sorted = [...ids].sort().reverse();
    assert.deepEqual(ids, sorted, 'ties in time are broken by id, descending');
  });

  test('filters by batch, by status, by message, combined', async () => {
    const batch = (await h.request('GET', `/v1/sms/delivery-reports?batch_id=${batchId}`, { key })).json();
    assert.equal(batch.pagination.total, 5);
    const delivered = (await h.request('GET', `/v1/sms/delivery-reports?batch_id=${batchId}&status=delivered&limit=1`, { key })).json();
    assert.equal(delivered.pagination.total, 2);
    assert.equal(delivered.data.length, 1);
    assert.equal(delivered.pagination.limit, 1);
    const failed = (await h.request('GET', `/v1/sms/delivery-reports?batch_id=${batchId}&status=failed`, { key })).json();
    assert.deepEqual(failed.data.map((r: { error_code: string }) => r.error_code).sort(), ['carrier_rejected', 'subscriber_unreachable']);
    const sent = (await h.request('GET', `/v1/sms/delivery-reports?status=sent`, { key })).json();
    assert.deepEqual(sent.data.map((r: { to: string }) => r.to), ['+447911121111']);
    const one = (await h.request('GET', `/v1/sms/delivery-reports?message_id=${singleId}`, { key })).json();
    assert.equal(one.pagination.total, 1);
    assert.equal(one.data[0].batch_id, null);
    const none = (await h.request('GET', `/v1/sms/delivery-reports?message_id=${singleId}&batch_id=${batchId}`, { key })).json();
    assert.equal(none.pagination.total, 0);
  });

  test('pages', async () => {
    const p1 = (await h.request('GET', '/v1/sms/delivery-reports?limit=4&page=1', { key })).json();
    const p2 = (await h.request('GET', '/v1/sms/delivery-reports?limit=4&page=2', { key })).json();
    const p3 = (await h.request('GET', '/v1/sms/delivery-reports?limit=4&page=3', { key })).json();
    assert.equal(p1.data.length, 4);
    assert.equal(p2.data.length, 2);
    assert.equal(p3.data.length, 0);
    assert.deepEqual(p2.pagination, { page: 2, limit: 4, total: 6 });
    const all = new Set([...p1.data, ...p2.data].map((r: { message_id: string }) => r.message_id));
    assert.equal(all.size, 6);
  });

  test('a total under 1,000 is exact at once; a larger one is at most a second old', async () => {
    const { key: big } = await h.customer({ credits: 5000 });
    const total = async () => (await h.request('GET', '/v1/sms/delivery-reports?limit=1', { key: big })).json().pagination.total as number;
    const bulk = (n: number) =>
      h.request('POST', '/v1/sms/bulk', { key: big, body: { from: 'Acme', messages: Array.from({ length: n }, (_, i) => ({ to: `+4479111${String(i).padStart(5, '0')}`, message: 'm' })) } });
    assert.equal((await bulk(999)).statusCode, 200);
    assert.equal(await total(), 999);
    await bulk(1);
    assert.equal(await total(), 1000, 'small totals are counted afresh');
    await bulk(5);
    assert.equal(await total(), 1000, 'a large total is remembered for up to a second');
    h.clock.advance(1000);
    assert.equal(await total(), 1005, 'and counted again after it');
  });

  test('bad parameters are invalid_request', async () => {
    for (const q of ['limit=201', 'limit=0', 'page=0', 'page=-1', 'status=lost', 'limit=abc', 'page=1.5']) {
      const res = await h.request('GET', `/v1/sms/delivery-reports?${q}`, { key });
      assert.equal(res.statusCode, 400, q);
      assert.equal(res.json().code, 'invalid_request', q);
    }
    assert.equal((await h.request('GET', '/v1/sms/delivery-reports?limit=200', { key })).statusCode, 200);
  });

  test("unknown ids and another account's messages give an empty page, not an error", async () => {
    const other = await h.customer();
    for (const q of [`message_id=${singleId}`, `batch_id=${batchId}`, 'message_id=msg_nope', 'batch_id=bat_nope']) {
      const res = await h.request('GET', `/v1/sms/delivery-reports?${q}`, { key: other.key });
      assert.equal(res.statusCode, 200, q);
      assert.equal(res.json().pagination.total, 0, q);
      assert.deepEqual(res.json().data, [], q);
    }
  });
});
