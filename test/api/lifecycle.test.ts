import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';
import { applyReceiptJobs } from '../../src/services/messages/record-delivery-reports.ts';

describe('message lifecycle through the simulator', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  async function sendAndTrack(key: string, to: string) {
    const res = await h.request('POST', '/v1/sms/send', { key, body: { to, from: 'Acme', message: 'hello', callback_url: 'https://hooks.example.com/sms' } });
    assert.equal(res.statusCode, 200);
    const id = res.json().message_id as string;
    const report = async () => (await h.request('GET', `/v1/sms/delivery-reports?message_id=${id}`, { key })).json().data[0];
    const events = async () =>
      (await h.ctx.store.db.selectFrom('webhook_events').selectAll().where('message_id', '=', id).orderBy('created_at').orderBy('id').execute()).map((e) => ({
        ...e,
        body: JSON.parse(e.payload),
      }));
    return { id, report, events };
  }

  test('anything else: pending, then sent at dispatch, then delivered SIM_DELIVERY_DELAY_MS later', async () => {
    const { key } = await h.customer();
    const m = await sendAndTrack(key, '+447911123456');
    assert.equal((await m.report()).status, 'pending');
    const dispatchedAt = h.clock.now();
    await h.workers.drain();
    const sent = await m.report();
    assert.equal(sent.status, 'sent');
    assert.equal(sent.sent_at, new Date(dispatchedAt).toISOString());
    assert.equal(sent.delivered_at, null);
    h.clock.advance(999);
    await h.workers.drain();
    assert.equal((await m.report()).status, 'sent', 'not before the delay');
    h.clock.advance(1);
    await h.workers.drain();
    const delivered = await m.report();
    assert.equal(delivered.status, 'delivered');
    assert.equal(delivered.delivered_at, new Date(dispatchedAt + 1000).toISOString());

    const events = await m.events();
    assert.deepEqual(events.map((e) => e.event), ['sms.sent', 'sms.delivered']);
    const payload = events[1]!.body;
    assert.deepEqual(Object.keys(payload).sort(), ['batch_id', 'delivered_at', 'event', 'from', 'message_id', 'sent_at', 'status', 'timestamp', 'to']);
    assert.equal(payload.batch_id, null);
    assert.equal(payload.to, '+447911123456');
    assert.equal(payload.from, 'Acme');
    assert.equal(payload.status, 'delivered');
    assert.equal(events[0]!.body.delivered_at, null);
    assert.equal(events[0]!.url, 'https://hooks.example.com/sms');
    const jobs = await h.ctx.store.db.selectFrom('jobs').select(['queue', 'ref']).where('queue', '=', 'webhook').execute();
    assert.ok(events.every((e) => jobs.some((j) => j.ref === e.id)), 'each event is queued for delivery');
  });

  test('0000: sent, then failed with subscriber_unreachable (error fields only on sms.failed)', async () => {
    const { key } = await h.customer();
    const m = await sendAndTrack(key, '+447911120000');
    await h.workers.drain();
    h.clock.advance(1000);
    await h.workers.drain();
    const r = await m.report();
    assert.equal(r.status, 'failed');
    assert.equal(r.error_code, 'subscriber_unreachable');
    assert.notEqual(r.sent_at, null);
    assert.equal(r.delivered_at, null);
    const events = await m.events();
    assert.deepEqual(events.map((e) => e.event), ['sms.sent', 'sms.failed']);
    assert.equal(events[1]!.body.error_code, 'subscriber_unreachable');
    assert.equal(typeof events[1]!.body.error_message, 'string');
    assert.equal('error_code' in events[0]!.body, false);
  });

  test('1111: stays sent, no receipt ever', async () => {
    const { key } = await h.customer();
    const m = await sendAndTrack(key, '+447911121111');
    await h.workers.drain();
    h.clock.advance(3_600_000);
    await h.workers.drain();
    assert.equal((await m.report()).status, 'sent');
    assert.deepEqual((await m.events()).map((e) => e.event), ['sms.sent']);
  });

  test('2222: rejected at submit, failed with carrier_rejected, never sent, refunded', async () => {
    const { key } = await h.customer({ credits: 5 });
    const m = await sendAndTrack(key, '+447911122222');
    await h.workers.drain();
    const r = await m.report();
    assert.equal(r.status, 'failed');
    assert.equal(r.error_code, 'carrier_rejected');
    assert.equal(r.sent_at, null);
    const events = await m.events();
    assert.deepEqual(events.map((e) => e.event), ['sms.failed']);
    assert.equal(events[0]!.body.sent_at, null);
    assert.equal((await h.request('GET', '/v1/account', { key })).json().data.credits_remaining, 5);
  });

  test('no callback_url, no events; bulk events carry the batch_id', async () => {
    const { key } = await h.customer();
    const plain = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'quiet' } });
    const bulk = await h.request('POST', '/v1/sms/bulk', {
      key,
      body: { from: 'Acme', callback_url: 'https://hooks.example.com/b', messages: [{ to: '+447911123456', message: 'loud' }] },
    });
    await h.workers.drain();
    const plainEvents = await h.ctx.store.db.selectFrom('webhook_events').select('id').where('message_id', '=', plain.json().message_id).execute();
    assert.equal(plainEvents.length, 0);
    const bulkEvents = await h.ctx.store.db.selectFrom('webhook_events').selectAll().where('batch_id', '=', bulk.json().batch_id).execute();
    assert.equal(bulkEvents.length, 1);
    assert.equal(JSON.parse(bulkEvents[0]!.payload).batch_id, bulk.json().batch_id);
  });

  test('status only moves forward: a late or duplicate receipt changes nothing', async () => {
    const { key } = await h.customer();
    const m = await sendAndTrack(key, '+447911123456');
    await h.workers.drain();
    h.clock.advance(1000);
    await h.workers.drain();
    assert.equal((await m.report()).status, 'delivered');
    const now = h.clock.now();
    const late = { id: 'job_late', queue: 'receipt' as const, account_id: null, ref: m.id, run_at: now, attempts: 1, created_at: now };
    await h.ctx.store.db.insertInto('jobs').values({ ...late, payload: JSON.stringify({ carrierMessageId: m.id, byMessageId: true, status: 'failed', errorCode: 'x', at: now }) }).execute();
    const result = await applyReceiptJobs(h.ctx, [{ ...late, payload: JSON.stringify({ carrierMessageId: m.id, byMessageId: true, status: 'failed', errorCode: 'x', at: now }) }]);
    assert.equal(result.applied, 0);
    assert.equal((await m.report()).status, 'delivered');
    assert.equal((await m.events()).length, 2, 'no event for a change that did not happen');
  });

  test('a batch of receipts applies each as if one by one: mixed outcomes, a second receipt for one message', async () => {
    const { key } = await h.customer();
    const [m1, m2, m3] = [await sendAndTrack(key, '+447911123456'), await sendAndTrack(key, '+447911123457'), await sendAndTrack(key, '+447911123458')];
    await h.workers.drain();
    const at = h.clock.now() + 500;
    const receipts = [
      { ref: m1.id, status: 'delivered' },
      { ref: m2.id, status: 'failed', errorCode: 'subscriber_absent' },
      { ref: m3.id, status: 'delivered' },
      // Another part of m3 reports later in the same batch: the first final receipt decides.
      { ref: m3.id, status: 'failed', errorCode: 'too_late' },
    ];
    const jobs = receipts.map(({ ref, ...r }, i) => ({
      id: `job_batch${i}`,
      queue: 'receipt' as const,
      account_id: null,
      ref,
      run_at: at,
      attempts: 0,
      created_at: at,
      payload: JSON.stringify({ carrierMessageId: ref, byMessageId: true, at, ...r }),
    }));
    await h.ctx.store.db.insertInto('jobs').values(jobs).execute();
    const result = await applyReceiptJobs(h.ctx, jobs);
    assert.deepEqual(result, { applied: 3, dropped: 0 });
    const r1 = await m1.report();
    assert.deepEqual([r1.status, r1.delivered_at, r1.error_code], ['delivered', new Date(at).toISOString(), null]);
    const r2 = await m2.report();
    assert.deepEqual([r2.status, r2.delivered_at, r2.error_code, r2.error_message], ['failed', null, 'subscriber_absent', 'Delivery failed.']);
    assert.equal((await m3.report()).status, 'delivered');
    assert.deepEqual(
      (await m3.events()).map((e) => e.body.event),
      ['sms.sent', 'sms.delivered'],
      'no event for the receipt that changed nothing',
    );
    assert.deepEqual((await m2.events()).map((e) => [e.body.event, e.body.error_code]), [['sms.sent', undefined], ['sms.failed', 'subscriber_absent']]);
  });

  test('every message reaches the simulator exactly once', async () => {
    const { key } = await h.customer({ credits: 500 });
    const res = await h.request('POST', '/v1/sms/bulk', {
      key,
      body: { from: 'Acme', messages: Array.from({ length: 300 }, (_, i) => ({ to: `+4479112${String(i).padStart(5, '0')}`, message: `n${i}` })) },
    });
    await h.workers.drain();
    for (const m of res.json().messages) assert.equal(h.carrier.submitted.get(m.message_id), 1);
  });
});
