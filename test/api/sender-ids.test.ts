import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';
import { approveSenderId } from '../../src/services/sender-ids/sender-ids.ts';

describe('/v1/sms/sender-ids', () => {
  let h: Harness;
  before(async () => {
    h = await harness({ RESERVED_SENDER_NAMES: 'Pigeon' });
  });
  after(() => h.close());

  test('registers as pending (201), lists newest first, becomes usable once approved', async () => {
    const { key } = await h.customer({ sender: null });
    const created = await h.request('POST', '/v1/sms/sender-ids', { key, body: { name: 'Shop1' } });
    assert.equal(created.statusCode, 201);
    const record = created.json().data;
    assert.equal(created.json().status, 'success');
    assert.equal(record.name, 'Shop1');
    assert.equal(record.status, 'pending');
    assert.match(record.id, /^sid_/);
    assert.match(record.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    h.clock.advance(5);
    await h.request('POST', '/v1/sms/sender-ids', { key, body: { name: 'Shop2' } });
    const list = await h.request('GET', '/v1/sms/sender-ids', { key });
    assert.deepEqual(list.json().data.map((r: { name: string }) => r.name), ['Shop2', 'Shop1']);

    const before = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Shop1', message: 'hi' } });
    assert.equal(before.json().code, 'invalid_sender_id');
    await approveSenderId(h.ctx, record.id);
    const list2 = await h.request('GET', '/v1/sms/sender-ids', { key });
    assert.equal(list2.json().data.find((r: { name: string }) => r.name === 'Shop1').status, 'approved');
    const after = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'SHOP1', message: 'hi' } });
    assert.equal(after.statusCode, 200);
    assert.equal(after.json().from, 'Shop1');
  });

  test('naming rules: 1 to 11 letters and digits', async () => {
    const { key } = await h.customer({ sender: null });
    for (const name of ['', 'TwelveChars1', 'Has Space', 'dash-name', 'under_score', 'Dot.', 'Émile', ' Lead', 'Trail ']) {
      const res = await h.request('POST', '/v1/sms/sender-ids', { key, body: { name } });
      assert.equal(res.statusCode, 400, JSON.stringify(name));
      assert.equal(res.json().code, 'invalid_sender_id_name', JSON.stringify(name));
    }
    const eleven = await h.request('POST', '/v1/sms/sender-ids', { key, body: { name: 'Elevenchars' } });
    assert.equal(eleven.statusCode, 201);
  });

  test('reserved names are refused, whatever the case, including the operator’s own additions', async () => {
    const { key } = await h.customer({ sender: null });
    for (const name of ['POLICE', 'paypal', 'Gov', 'pigeon']) {
      const res = await h.request('POST', '/v1/sms/sender-ids', { key, body: { name } });
      assert.equal(res.statusCode, 400, name);
      assert.equal(res.json().code, 'sender_id_not_allowed', name);
    }
    const contains = await h.request('POST', '/v1/sms/sender-ids', { key, body: { name: 'PoliceShop' } });
    assert.equal(contains.statusCode, 201, 'only the whole name is matched; review catches the rest');
  });

  test('a name is unique per account, case-insensitively; other accounts may use it', async () => {
    const a = await h.customer({ sender: null });
    const b = await h.customer({ sender: null });
    assert.equal((await h.request('POST', '/v1/sms/sender-ids', { key: a.key, body: { name: 'Bakery' } })).statusCode, 201);
    const dup = await h.request('POST', '/v1/sms/sender-ids', { key: a.key, body: { name: 'BAKERY' } });
    assert.equal(dup.statusCode, 409);
    assert.equal(dup.json().code, 'sender_id_exists');
    assert.equal((await h.request('POST', '/v1/sms/sender-ids', { key: b.key, body: { name: 'bakery' } })).statusCode, 201);
    const listA = await h.request('GET', '/v1/sms/sender-ids', { key: a.key });
    assert.equal(listA.json().data.length, 1, 'an account sees only its own Sender IDs');
  });

  test('a missing or wrongly typed name is invalid_request', async () => {
    const { key } = await h.customer({ sender: null });
    assert.equal((await h.request('POST', '/v1/sms/sender-ids', { key, body: {} })).json().code, 'invalid_request');
    assert.equal((await h.request('POST', '/v1/sms/sender-ids', { key, body: { name: 42 } })).json().code, 'invalid_request');
  });
});
