/**
 * Marketing traffic (DECISIONS.md §16) through the HTTP interface: the category of sends and
 * bulks, shown in their reports and in the OpenAPI document.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';
import { OPENAPI_PATH } from '../../src/http/openapi.ts';

describe('message category', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  async function report(key: string, query: string) {
    return (await h.request('GET', `/v1/sms/delivery-reports?${query}`, { key })).json().data;
  }

  test('a send is transactional unless it says marketing, and its report says which', async () => {
    const { key } = await h.customer({ credits: 10 });
    const plain = (await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'Your code is 1234' } })).json();
    const promo = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'Sale today', category: 'marketing' } });
    assert.equal(promo.statusCode, 200);
    const explicit = (await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'Receipt', category: 'transactional' } })).json();
    assert.equal((await report(key, `message_id=${plain.message_id}`))[0].category, 'transactional');
    assert.equal((await report(key, `message_id=${promo.json().message_id}`))[0].category, 'marketing');
    assert.equal((await report(key, `message_id=${explicit.message_id}`))[0].category, 'transactional');
    assert.equal(promo.json().credits_remaining, 8, 'charged as any other send');
  });

  test('sends accepted together keep each its own category, whichever comes first', async () => {
    const { key } = await h.customer({ credits: 20 });
    const send = (n: number, category?: string) => h.request('POST', '/v1/sms/send', { key, body: { to: `+44791112345${n}`, from: 'Acme', message: `m${n}`, ...(category ? { category } : {}) } });
    // Sent in one turn, they share one transaction (acceptance-batcher.ts), the plain ones first.
    const answers = await Promise.all([send(1), send(2), send(3, 'marketing'), send(4, 'marketing')]);
    for (const [i, a] of answers.entries()) {
      assert.equal(a.statusCode, 200);
      assert.equal((await report(key, `message_id=${a.json().message_id}`))[0].category, i < 2 ? 'transactional' : 'marketing');
    }
  });

  test('a bulk carries its category to every message of the batch', async () => {
    const { key } = await h.customer({ credits: 10 });
    const res = await h.request('POST', '/v1/sms/bulk', {
      key,
      body: { from: 'Acme', category: 'marketing', messages: [{ to: '+447911123456', message: 'a' }, { to: '+447911123457', message: 'b' }] },
    });
    assert.equal(res.statusCode, 200);
    const rows = await report(key, `batch_id=${res.json().batch_id}`);
    assert.equal(rows.length, 2);
    assert.ok(rows.every((r: { category: string }) => r.category === 'marketing'));
  });

  test('an unknown category is refused whole with invalid_request, nothing debited', async () => {
    const { key } = await h.customer({ credits: 10 });
    const res = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'x', category: 'promo' } });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, 'invalid_request');
    assert.equal((await h.request('GET', '/v1/account', { key })).json().data.credits_remaining, 10);
  });

  test('the OpenAPI document names the category on sends, bulks and reports', async () => {
    const doc = (await h.request('GET', OPENAPI_PATH)).json();
    const schemaOf = (path: string) => doc.paths[path].post.requestBody.content['application/json'].schema;
    const names = (schema: unknown) => ['transactional', 'marketing'].filter((c) => JSON.stringify(schema).includes(`"${c}"`));
    assert.deepEqual(names(schemaOf('/v1/sms/send').properties.category), ['transactional', 'marketing']);
    assert.deepEqual(names(schemaOf('/v1/sms/bulk').properties.category), ['transactional', 'marketing']);
    const reports = doc.paths['/v1/sms/delivery-reports'].get.responses['200'].content['application/json'].schema;
    assert.deepEqual(names(reports.properties.data.items.properties.category), ['transactional', 'marketing']);
  });
});
