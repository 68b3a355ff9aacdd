/** The two-way endpoints of the client (numbers, inbound, opt-outs, the events URL) and verifyAccountEvent, against a real Pigeon server. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { Pigeon, PigeonApiError, verifyAccountEvent, type AccountEvent } from '../src/index.ts';
import { assignNumber } from '../../../src/services/numbers/numbers.ts';
import { getAccount } from '../../../src/services/accounts/accounts.ts';
import { liveServer, type LiveServer } from './server.ts';

describe('client: numbers, inbound messages, opt-outs, events URL', () => {
  let server: LiveServer;
  before(async () => {
    server = await liveServer({ WEBHOOK_RETRY_DELAYS_MS: '0' });
  });
  after(() => server.close());

  const client = (apiKey: string) => new Pigeon({ apiKey, baseUrl: server.baseUrl, sleep: async () => {} });

  test('every method answers the API’s body, and a keyword opt-out cannot be removed', async () => {
    const { key, accountId } = await server.h.customer({ credits: 10 });
    await assignNumber(server.h.ctx, accountId, '+447700900800', 'Main');
    const pigeon = client(key);
    const numbers = await pigeon.numbers.list();
    assert.deepEqual(numbers.data.map((n) => [n.number, n.label]), [['+447700900800', 'Main']]);

    assert.deepEqual(await pigeon.events.setUrl('https://127.0.0.1:9/events'), { status: 'success', data: { url: 'https://127.0.0.1:9/events' } });
    const received = await pigeon.inbound.simulate({ from: '+447911123456', to: '+447700900800', message: 'STOP' });
    assert.equal(received.data.message, 'STOP');
    const page = await pigeon.inbound.list({ from: '+447911123456' });
    assert.deepEqual(page.data, [received.data]);
    const all = [];
    for await (const m of pigeon.inbound.iterate({ limit: 1 })) all.push(m.id);
    assert.deepEqual(all, [received.data.id]);

    const list = await pigeon.optOuts.list();
    assert.deepEqual(list.data.map((o) => [o.phone, o.source]), [['+447911123456', 'keyword']]);
    await assert.rejects(pigeon.optOuts.remove('+447911123456'), (e) => e instanceof PigeonApiError && e.code === 'opt_out_by_recipient' && e.status === 409);
    const added = await pigeon.optOuts.add('+447911000002');
    assert.equal(added.created, true);
    assert.equal((await pigeon.optOuts.add('+447911000002')).created, false);
    await pigeon.optOuts.remove('+447911000002');
    await assert.rejects(pigeon.optOuts.remove('+447911000002'), (e) => e instanceof PigeonApiError && e.code === 'not_found');
    await assert.rejects(pigeon.sms.send({ to: '+447911123456', from: 'Acme', message: 'x' }), (e) => e instanceof PigeonApiError && e.code === 'recipient_opted_out');
    await pigeon.events.clearUrl();
    assert.equal((await getAccount(server.h.ctx, accountId)).events_url, null);

    const events = await pigeon.webhooks.listEvents();
    const kinds = events.data.map((e) => [e.event, e.message_id, e.inbound_id === received.data.id]);
    assert.deepEqual(kinds.reverse().slice(0, 2), [['sms.received', null, true], ['recipient.opted_out', null, true]]);
  });

  test('verifyAccountEvent: typed account events, the signature checked as for delivery events', async () => {
    const secret = 'whsec_test';
    const sign = (body: string, t: number) => `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;
    const now = 1_800_000_000;
    const body = JSON.stringify({ event: 'recipient.opted_out', timestamp: '2027-01-15T08:00:00.000Z', data: { phone: '+447911123456', number: '+447700900800', source: 'keyword' } });
    const event: AccountEvent = await verifyAccountEvent(body, { 'x-pigeon-signature': sign(body, now) }, secret, { nowSeconds: now });
    switch (event.event) {
      case 'recipient.opted_out':
        assert.equal(event.data.source, 'keyword');
        break;
      default:
        assert.fail(`expected recipient.opted_out, got ${event.event}`);
    }
    await assert.rejects(verifyAccountEvent(body, { 'x-pigeon-signature': sign(body, now) }, 'whsec_other', { nowSeconds: now }), /does not match/);
    const notAnEvent = JSON.stringify({ event: 'sms.sent' });
    await assert.rejects(verifyAccountEvent(notAnEvent, { 'x-pigeon-signature': sign(notAnEvent, now) }, secret, { nowSeconds: now }), /not a Pigeon account event/);
  });
});
