/**
 * Opt-outs through the API (DECISIONS.md §8): STOP, START and HELP from the simulator, the
 * confirmations (free, capped, sent even at 0 credits or when suspended), sends refused with
 * nothing stored or debited, queued messages failed and refunded at dispatch, the list API.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';
import { assignNumber, releaseNumber } from '../../src/services/numbers/numbers.ts';
import { setAccountStatus } from '../../src/services/accounts/accounts.ts';

const PHONE = '+447911123456';

describe('opt-outs', () => {
  let h: Harness;
  let seq = 0;
  before(async () => {
    h = await harness({ SIM_DELIVERY_DELAY_MS: '0' });
  });
  after(() => h.close());

  async function customer(credits = 20) {
    const c = await h.customer({ credits });
    const number = `+4477009007${String(++seq).padStart(2, '0')}`;
    await assignNumber(h.ctx, c.accountId, number);
    await h.request('PUT', '/v1/account/events-url', { key: c.key, body: { url: 'https://127.0.0.1:9/events' } });
    const reply = (message: string, from = PHONE) => h.request('POST', '/v1/simulator/inbound', { key: c.key, body: { from, to: number, message } });
    const credit = async () => (await h.request('GET', '/v1/account', { key: c.key })).json().data.credits_remaining as number;
    const messages = () => h.ctx.store.db.selectFrom('messages').selectAll().where('account_id', '=', c.accountId).orderBy('created_at').orderBy('id').execute();
    const events = async () =>
      (await h.ctx.store.db.selectFrom('webhook_events').select(['event', 'payload', 'inbound_id']).where('account_id', '=', c.accountId).orderBy('created_at').orderBy('id').execute()).map((e) => ({
        event: e.event,
        data: JSON.parse(e.payload).data,
        inbound_id: e.inbound_id,
      }));
    return { ...c, number, reply, credit, messages, events };
  }
  const send = (key: string, to = PHONE, from = 'Acme') => h.request('POST', '/v1/sms/send', { key, body: { to, from, message: 'Offer!' } });

  test('STOP: opted out, event after sms.received, a free confirmation; sends refused with nothing stored or debited', async () => {
    const c = await customer();
    assert.equal((await c.reply('  stop ')).statusCode, 201);
    const events = await c.events();
    assert.deepEqual(events.map((e) => e.event), ['sms.received', 'recipient.opted_out']);
    assert.deepEqual(events[1]!.data, { phone: PHONE, number: c.number, source: 'keyword' });
    assert.equal(events[1]!.inbound_id, events[0]!.data.id);
    const [confirmation] = await c.messages();
    assert.equal(confirmation!.sender, c.number);
    assert.equal(confirmation!.recipient, PHONE);
    assert.equal(confirmation!.body, 'You are unsubscribed from Customer ' + confirmation!.body.match(/Customer (\d+)/)![1] + '. No more messages will be sent. Reply START to resubscribe.');
    assert.equal(Number(confirmation!.charged), 0);
    assert.equal(await c.credit(), 20, 'the confirmation is free');
    await h.workers.drain();
    assert.equal((await c.messages())[0]!.status, 'delivered');

    const single = await send(c.key, '+44 7911 123456');
    assert.equal(single.statusCode, 400);
    assert.equal(single.json().code, 'recipient_opted_out');
    const viaNumber = await send(c.key, PHONE, c.number);
    assert.equal(viaNumber.json().code, 'recipient_opted_out', 'from any sender of the account');
    const bulk = await h.request('POST', '/v1/sms/bulk', { key: c.key, body: { from: 'Acme', messages: [{ to: PHONE, message: 'a' }, { to: '+447911123457', message: 'b' }] } });
    assert.equal(bulk.statusCode, 200);
    assert.equal(bulk.json().queued, 1);
    assert.deepEqual(bulk.json().errors.map((e: { index: number; code: string }) => [e.index, e.code]), [[0, 'recipient_opted_out']]);
    assert.equal(await c.credit(), 19);
    assert.equal((await c.messages()).length, 2, 'only the confirmation and the bulk’s other entry');
    const other = await customer();
    assert.equal((await send(other.key)).statusCode, 200, 'another account is not affected');
  });

  test('START opts back in (with a confirmation); HELP answers the help text; at most 5 confirmations a day', async () => {
    const c = await customer();
    await c.reply('STOP');
    assert.equal((await c.reply('Start')).statusCode, 201);
    assert.deepEqual((await c.events()).map((e) => e.event), ['sms.received', 'recipient.opted_out', 'sms.received', 'recipient.opted_in']);
    assert.equal((await send(c.key)).statusCode, 200);
    assert.match((await c.messages())[1]!.body, /^You are resubscribed to Customer \d+\. Reply STOP to unsubscribe\.$/);
    for (let i = 0; i < 5; i++) await c.reply('HELP');
    const confirmations = (await c.messages()).filter((m) => Number(m.charged) === 0);
    assert.equal(confirmations.length, 5, 'STOP, START and three HELP: the cap of 5 a day');
    assert.match(confirmations[4]!.body, /^Customer \d+: reply STOP to unsubscribe\.$/);
    await c.reply('STOP');
    assert.equal((await send(c.key)).json().code, 'recipient_opted_out', 'the opt-out applies even when the confirmation is capped');
    assert.equal((await c.messages()).filter((m) => Number(m.charged) === 0).length, 5);
    h.clock.advance(24 * 3600_000);
    await c.reply('INFO');
    assert.equal((await c.messages()).filter((m) => Number(m.charged) === 0).length, 6, 'a new day');
  });

  test('a confirmation goes even at 0 credits and when the account is suspended', async () => {
    const c = await customer(0);
    await setAccountStatus(h.ctx, c.accountId, 'suspended');
    const stop = await h.request('POST', '/v1/simulator/inbound', { key: c.key, body: { from: PHONE, to: c.number, message: 'STOP' } });
    assert.equal(stop.statusCode, 403, 'the API refuses a suspended account’s key');
    await setAccountStatus(h.ctx, c.accountId, 'active');
    await c.reply('STOP');
    await setAccountStatus(h.ctx, c.accountId, 'suspended');
    await h.workers.drain();
    const [confirmation] = await c.messages();
    assert.equal(confirmation!.status, 'delivered');
    assert.equal(await h.ctx.store.db.selectFrom('credit_ledger').select('id').where('account_id', '=', c.accountId).executeTakeFirst(), undefined, 'no ledger row: nothing charged');
  });

  test('queued messages are failed at dispatch and refunded: opted out, suspended, sender withdrawn', async () => {
    const c = await customer();
    const queued = await send(c.key);
    const fromNumber = await send(c.key, '+447911123458', c.number);
    const toOther = await send(c.key, '+447911123459');
    assert.equal(await c.credit(), 17);
    await c.reply('STOP');
    await releaseNumber(h.ctx, c.number);
    await h.workers.drain();
    const byId = new Map((await c.messages()).map((m) => [m.id, m]));
    assert.equal(byId.get(queued.json().message_id)!.status, 'failed');
    assert.equal(byId.get(queued.json().message_id)!.error_code, 'recipient_opted_out');
    assert.equal(byId.get(fromNumber.json().message_id)!.error_code, 'sender_not_allowed');
    assert.equal(byId.get(toOther.json().message_id)!.status, 'delivered');
    assert.equal(await c.credit(), 19, 'both refused messages refunded');

    const d = await customer();
    const held = await send(d.key);
    await setAccountStatus(h.ctx, d.accountId, 'suspended');
    await h.workers.drain();
    const [m] = await d.messages();
    assert.equal(m!.id, held.json().message_id);
    assert.equal(m!.error_code, 'account_suspended');
    await setAccountStatus(h.ctx, d.accountId, 'active');
    assert.equal(await d.credit(), 20);
  });

  test('the list API: add (201, then 200), list with filter and pages, remove (204, 404), keyword opt-outs not removable (409)', async () => {
    const c = await customer();
    const add = (phone: string) => h.request('POST', '/v1/opt-outs', { key: c.key, body: { phone } });
    const first = await add('+44 7911 000001');
    assert.equal(first.statusCode, 201);
    assert.deepEqual({ ...first.json().data, created_at: 'x' }, { phone: '+447911000001', source: 'api', created_at: 'x' });
    assert.equal((await add('+447911000001')).statusCode, 200);
    assert.equal((await add('07911 000001')).json().code, 'invalid_recipient');
    assert.equal((await send(c.key, '+447911000001')).json().code, 'recipient_opted_out');
    h.clock.advance(10);
    await add('+447911000002');
    h.clock.advance(10);
    await c.reply('STOP', '+447911000003');
    const list = await h.request('GET', '/v1/opt-outs?limit=2', { key: c.key });
    assert.deepEqual(list.json().data.map((o: { phone: string; source: string }) => [o.phone, o.source]), [['+447911000003', 'keyword'], ['+447911000002', 'api']]);
    assert.deepEqual(list.json().pagination, { page: 1, limit: 2, total: 3 });
    assert.equal((await h.request('GET', '/v1/opt-outs?phone=%2B447911000001', { key: c.key })).json().data.length, 1);

    const keyword = await h.request('DELETE', '/v1/opt-outs/+447911000003', { key: c.key });
    assert.equal(keyword.statusCode, 409);
    assert.equal(keyword.json().code, 'opt_out_by_recipient');
    const removed = await h.request('DELETE', '/v1/opt-outs/%2B447911000001', { key: c.key });
    assert.equal(removed.statusCode, 204);
    assert.equal((await h.request('DELETE', '/v1/opt-outs/+447911000001', { key: c.key })).json().code, 'not_found');
    assert.equal((await send(c.key, '+447911000001')).statusCode, 200);
    const kinds = (await c.events()).map((e) => [e.event, e.data.source]).filter(([e]) => e !== 'sms.received');
    assert.deepEqual(kinds, [['recipient.opted_out', 'api'], ['recipient.opted_out', 'api'], ['recipient.opted_out', 'keyword'], ['recipient.opted_in', 'api']]);

    const reader = await h.customer({ scopes: 'opt_outs:read' });
    assert.equal((await h.request('POST', '/v1/opt-outs', { key: reader.key, body: { phone: PHONE } })).json().code, 'insufficient_permissions');
    assert.equal((await h.request('GET', '/v1/opt-outs', { key: reader.key })).statusCode, 200);
  });
});
