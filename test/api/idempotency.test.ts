import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';

describe('Idempotency-Key', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  const send = { to: '+447911123456', from: 'Acme', message: 'once only' };

  test('a repeat returns the first response, marked replayed, with no new message and no new debit', async () => {
    const { key } = await h.customer({ credits: 10 });
    const headers = { 'idempotency-key': 'order-1001' };
    const first = await h.request('POST', '/v1/sms/send', { key, body: send, headers });
    const second = await h.request('POST', '/v1/sms/send', { key, body: send, headers });
    assert.equal(first.statusCode, 200);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    assert.equal(second.statusCode, 200);
    assert.equal(second.headers['idempotent-replayed'], 'true');
    assert.deepEqual(second.json(), first.json());
    assert.equal((await h.request('GET', '/v1/account', { key })).json().data.credits_remaining, 9);
    assert.equal((await h.request('GET', '/v1/sms/delivery-reports', { key })).json().pagination.total, 1);
  });

  test('concurrent repeats send once', async () => {
    const { key } = await h.customer({ credits: 10 });
    const headers = { 'idempotency-key': 'burst' };
    const results = await Promise.all(Array.from({ length: 10 }, () => h.request('POST', '/v1/sms/send', { key, body: send, headers })));
    for (const r of results) assert.ok([200, 409].includes(r.statusCode), String(r.statusCode));
    const ids = new Set(results.filter((r) => r.statusCode === 200).map((r) => r.json().message_id));
    assert.equal(ids.size, 1);
    assert.equal((await h.request('GET', '/v1/account', { key })).json().data.credits_remaining, 9);
  });

  test('the same key with another body is 422 idempotency_key_reused', async () => {
    const { key } = await h.customer({ credits: 10 });
    const headers = { 'idempotency-key': 'k2' };
    await h.request('POST', '/v1/sms/send', { key, body: send, headers });
    const other = await h.request('POST', '/v1/sms/send', { key, body: { ...send, message: 'different' }, headers });
    assert.equal(other.statusCode, 422);
    assert.equal(other.json().code, 'idempotency_key_reused');
    const bulk = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', messages: [send] }, headers });
    assert.equal(bulk.json().code, 'idempotency_key_reused', 'a key belongs to one endpoint');
  });

  test('keys are per account', async () => {
    const a = await h.customer({ credits: 10 });
    const b = await h.customer({ credits: 10 });
    const headers = { 'idempotency-key': 'shared-name' };
    const ra = await h.request('POST', '/v1/sms/send', { key: a.key, body: send, headers });
    const rb = await h.request('POST', '/v1/sms/send', { key: b.key, body: send, headers });
    assert.notEqual(ra.json().message_id, rb.json().message_id);
    assert.equal(rb.headers['idempotent-replayed'], undefined);
  });

  test('409 idempotency_in_progress while the first request holds the key', async () => {
    const { key, accountId } = await h.customer({ credits: 10 });
    const now = h.clock.now();
    await h.ctx.store.db
      .insertInto('idempotency_keys')
      .values({
        account_id: accountId,
        key: 'held',
        request_hash: (await import('../../src/services/messages/idempotency.ts')).requestHash('POST', '/v1/sms/send', send),
        state: 'in_progress',
        response_status: null,
        response_body: null,
        locked_until: now + 60_000,
        expires_at: now + 86_400_000,
        created_at: now,
      })
      .execute();
    const res = await h.request('POST', '/v1/sms/send', { key, body: send, headers: { 'idempotency-key': 'held' } });
    assert.equal(res.statusCode, 409);
    assert.equal(res.json().code, 'idempotency_in_progress');
    assert.equal(res.headers['retry-after'], '1');
    // The holder died: once its lock runs out, the request goes through.
    h.clock.advance(61_000);
    const later = await h.request('POST', '/v1/sms/send', { key, body: send, headers: { 'idempotency-key': 'held' } });
    assert.equal(later.statusCode, 200);
  });

  test('an error answer is replayed too; a key expires after 24 hours', async () => {
    const { key } = await h.customer({ credits: 0 });
    const headers = { 'idempotency-key': 'poor' };
    const first = await h.request('POST', '/v1/sms/send', { key, body: send, headers });
    assert.equal(first.statusCode, 422);
    const again = await h.request('POST', '/v1/sms/send', { key, body: send, headers });
    assert.equal(again.statusCode, 422);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.deepEqual(again.json(), first.json());
    h.clock.advance(24 * 3600_000 + 1);
    const fresh = await h.request('POST', '/v1/sms/send', { key, body: send, headers });
    assert.equal(fresh.headers['idempotent-replayed'], undefined);
  });

  test('a key longer than 255 characters is invalid_request', async () => {
    const { key } = await h.customer();
    const res = await h.request('POST', '/v1/sms/send', { key, body: send, headers: { 'idempotency-key': 'k'.repeat(256) } });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, 'invalid_request');
  });

  test('bulk is idempotent too', async () => {
    const { key } = await h.customer({ credits: 10 });
    const headers = { 'idempotency-key': 'campaign-7' };
    const body = { from: 'Acme', messages: [send, { ...send, to: '+447911123457' }] };
    const first = await h.request('POST', '/v1/sms/bulk', { key, body, headers });
    const second = await h.request('POST', '/v1/sms/bulk', { key, body, headers });
    assert.equal(second.json().batch_id, first.json().batch_id);
    assert.equal((await h.request('GET', '/v1/account', { key })).json().data.credits_remaining, 8);
  });

  test('a large bulk’s stored record is a fraction of its answer, and its replay is byte for byte the same', async () => {
    const { key, accountId } = await h.customer({ credits: 10_000 });
    const headers = { 'idempotency-key': 'big-campaign' };
    const messages = Array.from({ length: 3000 }, (_, i) => ({ to: `+4479111${String(10_000 + i).padStart(5, '0')}`, message: `Your code is ${i}` }));
    // A few invalid entries, one with an over-long recipient: errors are stored too.
    messages.push({ to: `+44${'9'.repeat(50_000)}`, message: 'x' }, { to: '+447911123456', message: '' });
    const body = { from: 'Acme', messages };
    const first = await h.request('POST', '/v1/sms/bulk', { key, body, headers });
    assert.equal(first.statusCode, 200);
    assert.equal(first.json().queued, 3000);
    const row = await h.ctx.store.db.selectFrom('idempotency_keys').select('response_body').where('account_id', '=', accountId).where('key', '=', 'big-campaign').executeTakeFirstOrThrow();
    const stored = row.response_body!.length;
    assert.ok(stored < first.body.length / 4, `stored ${stored} characters for an answer of ${first.body.length} bytes`);
    const second = await h.request('POST', '/v1/sms/bulk', { key, body, headers });
    assert.equal(second.headers['idempotent-replayed'], 'true');
    assert.equal(second.body, first.body);
    assert.equal(second.headers['content-type'], first.headers['content-type']);
  });

  test('expired keys are deleted by the sweeper, without the key being used again', async () => {
    const { key, accountId } = await h.customer({ credits: 10 });
    await h.request('POST', '/v1/sms/send', { key, body: send, headers: { 'idempotency-key': 'old' } });
    h.clock.advance(12 * 3600_000);
    await h.request('POST', '/v1/sms/send', { key, body: send, headers: { 'idempotency-key': 'younger' } });
    const keys = async () =>
      (await h.ctx.store.db.selectFrom('idempotency_keys').select('key').where('account_id', '=', accountId).orderBy('key').execute()).map((r) => r.key);
    await h.workers.drain();
    assert.deepEqual(await keys(), ['old', 'younger'], 'nothing expired yet');
    h.clock.advance(12 * 3600_000);
    await h.workers.drain();
    assert.deepEqual(await keys(), ['younger'], 'the 24-hour-old key is gone');
    h.clock.advance(12 * 3600_000);
    await h.workers.drain();
    assert.deepEqual(await keys(), []);
  });
});
