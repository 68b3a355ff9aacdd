/**
 * Prices per destination (DECISIONS.md §11) through the HTTP interface: the longest prefix wins,
 * `blocked` and unpriced destinations are refused (per entry in bulk), the price is fixed on the
 * message at acceptance (reports, refunds, cancels and the ledger use it; later changes do not
 * touch it, scheduled messages included), bulk stays all-or-nothing with mixed prices, and
 * `GET /v1/pricing` and `POST /v1/sms/quote` answer what a send would.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';
import { importCard, setAccountRateCard } from '../../src/services/pricing/rate-cards.ts';
import { ledgerMatchesBalance } from '../../src/services/accounts/accounts.ts';
import { readCampaign } from '../../src/services/campaigns/campaigns.ts';

const HOUR = 3_600_000;
const CARD = 'prefix,credits_per_segment\n+44,3\n+447,5\n+4479,blocked\n+33,2\n';
const LONG = 'x'.repeat(200); // two GSM-7 segments

describe('rate cards through the API', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
    await importCard(h.ctx, 'gold', CARD);
  });
  after(() => h.close());

  async function pricedCustomer(credits: number, card = 'gold') {
    const c = await h.customer({ credits });
    await setAccountRateCard(h.ctx, c.accountId, card);
    return c;
  }
  const send = (key: string, to: string, extra: Record<string, unknown> = {}) => h.request('POST', '/v1/sms/send', { key, body: { to, from: 'Acme', message: LONG, ...extra } });
  const balance = async (key: string) => (await h.request('GET', '/v1/account', { key })).json().data.credits_remaining as number;
  const report = async (key: string, id: string) => (await h.request('GET', `/v1/sms/delivery-reports?message_id=${id}`, { key })).json().data[0];

  test('the longest prefix in effect prices the send; blocked and unpriced destinations are refused with nothing debited', async () => {
    const { key } = await pricedCustomer(100);
    const uk = await send(key, '+441632960001');
    assert.equal(uk.statusCode, 200);
    assert.equal(uk.json().credits_used, 6, '+44 at 3, two segments');
    assert.equal(uk.json().credits_remaining, 94);
    const mobile = (await send(key, '+447700900123')).json();
    assert.equal(mobile.credits_used, 10, '+447 at 5 beats +44');
    assert.equal((await report(key, mobile.message_id)).credits_used, 10, 'the report carries the charge');

    const blocked = await send(key, '+447912345678');
    assert.equal(blocked.statusCode, 400);
    assert.equal(blocked.json().code, 'destination_not_allowed');
    const unpriced = await send(key, '+12025550143');
    assert.equal(unpriced.statusCode, 400);
    assert.equal(unpriced.json().code, 'destination_not_priced');
    assert.match(unpriced.json().docs_url, /#destination_not_priced$/);
    assert.equal(await balance(key), 84);

    // The default card is + → 1: an account that never had a card pays one credit per segment.
    const plain = await h.customer({ credits: 10 });
    assert.equal((await send(plain.key, '+12025550143')).json().credits_used, 2);
  });

  test('GET /v1/pricing and POST /v1/sms/quote answer as a send would, with the next dated change', async () => {
    const { key } = await pricedCustomer(5);
    const now = h.clock.now();
    await importCard(h.ctx, 'gold', 'prefix,credits_per_segment\n+447,7\n', { effectiveFrom: now + HOUR });
    const priced = await h.request('GET', '/v1/pricing?to=%2B44%207700%20900123', { key });
    assert.equal(priced.statusCode, 200);
    assert.deepEqual(priced.json(), {
      status: 'success',
      data: {
        to: '+447700900123',
        prefix: '+447',
        credits_per_segment: 5,
        effective_from: priced.json().data.effective_from,
        next_change: { credits_per_segment: 7, effective_from: new Date(now + HOUR).toISOString() },
      },
    });
    assert.equal((await h.request('GET', '/v1/pricing?to=%2B33612345678', { key })).json().data.next_change, null);
    for (const [to, code] of [['+12025550143', 'destination_not_priced'], ['+447912345678', 'destination_not_allowed'], ['12', 'invalid_recipient']] as const) {
      const res = await h.request('GET', `/v1/pricing?to=${encodeURIComponent(to)}`, { key });
      assert.equal(res.statusCode, 400, to);
      assert.equal(res.json().code, code, to);
    }
    const noScope = await h.customer({ scopes: 'sms:send' });
    assert.equal((await h.request('GET', '/v1/pricing?to=%2B33612345678', { key: noScope.key })).statusCode, 403);

    const quote = await h.request('POST', '/v1/sms/quote', { key, body: { to: '+447700900123', from: 'Acme', message: LONG } });
    assert.deepEqual(quote.json(), { status: 'success', data: { segments: 2, encoding: 'GSM-7', credits_per_segment: 5, credits: 10 } });
    const refused = await h.request('POST', '/v1/sms/quote', { key, body: { to: '+12025550143', from: 'Acme', message: 'hi' } });
    assert.equal(refused.json().code, 'destination_not_priced');
    assert.equal((await h.request('POST', '/v1/sms/quote', { key, body: { to: '+447700900123', from: 'Nobody', message: 'hi' } })).json().code, 'invalid_sender_id');
    assert.equal(await balance(key), 5, 'a quote debits nothing, even above the balance');
    assert.equal((await h.request('GET', '/v1/sms/delivery-reports', { key })).json().pagination.total, 0, 'and stores nothing');

    h.clock.advance(HOUR);
    assert.equal((await h.request('GET', '/v1/pricing?to=%2B447700900123', { key })).json().data.credits_per_segment, 7, 'the dated change took effect');
    // Back to 5 for the other tests.
    await importCard(h.ctx, 'gold', 'prefix,credits_per_segment\n+447,5\n');
  });

  test('bulk with mixed prices: per-entry refusals, the sum debited, all or nothing on credits', async () => {
    const { key, accountId } = await pricedCustomer(15);
    const messages = [
      { to: '+441632960001', message: 'a' }, // 3
      { to: '+447700900123', message: 'b' }, // 5
      { to: '+447912345678', message: 'c' }, // blocked
      { to: '+12025550143', message: 'd' }, // not priced
      { to: '+33612345678', message: LONG }, // 2 × 2
      { to: '+447700900124', message: 'e' }, // 5: 17 in all
    ];
    const short = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', messages } });
    assert.equal(short.statusCode, 422);
    assert.equal(short.json().code, 'insufficient_credits');
    assert.equal(await balance(key), 15);
    assert.equal((await h.request('GET', '/v1/sms/delivery-reports', { key })).json().pagination.total, 0, 'nothing queued');

    const ok = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', messages: messages.slice(0, 5) } });
    assert.equal(ok.statusCode, 200);
    const bulk = ok.json();
    assert.equal(bulk.credits_used, 12);
    assert.equal(bulk.credits_remaining, 3);
    assert.deepEqual(bulk.errors.map((e: { index: number; code: string }) => [e.index, e.code]), [[2, 'destination_not_allowed'], [3, 'destination_not_priced']]);
    const reports = (await h.request('GET', `/v1/sms/delivery-reports?batch_id=${bulk.batch_id}`, { key })).json().data;
    assert.deepEqual(reports.map((r: { to: string; credits_used: number }) => [r.to, r.credits_used]).sort(), [['+33612345678', 4], ['+441632960001', 3], ['+447700900123', 5]]);
    const { balance: b, ledger } = await ledgerMatchesBalance(h.ctx, accountId);
    assert.equal(b, ledger);
  });

  test('the price is fixed at acceptance: a refund and a cancel give back exactly what was charged after the price changed', async () => {
    // A card of its own, so the price can change under this test's messages.
    await importCard(h.ctx, 'silver', 'prefix,credits_per_segment\n+44,3\n');
    const { key, accountId } = await pricedCustomer(100, 'silver');
    const rejected = (await send(key, '+447911112222')).json(); // refused by the carrier at submit
    const scheduled = (await send(key, '+447911123456', { send_at: new Date(h.clock.now() + 2 * HOUR).toISOString() })).json();
    const later = (await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', send_at: new Date(h.clock.now() + 2 * HOUR).toISOString(), messages: [{ to: '+447911123457', message: LONG }, { to: '+447911123458', message: 'one' }] } })).json();
    assert.deepEqual([rejected.credits_used, scheduled.credits_used, later.credits_used], [6, 6, 9]);
    assert.equal(await balance(key), 79);

    await importCard(h.ctx, 'silver', 'prefix,credits_per_segment\n+44,11\n');
    await h.workers.drain();
    const failed = await report(key, rejected.message_id);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.credits_used, 6);
    assert.equal(await balance(key), 85, 'refunded 6, not 22');

    const cancel = await h.request('POST', `/v1/sms/batches/${later.batch_id}/cancel`, { key });
    assert.equal(cancel.json().data.credits_refunded, 9);
    assert.equal(await balance(key), 94);

    // The scheduled message goes out at its time at the price it was accepted at.
    h.clock.advance(2 * HOUR);
    await h.workers.drain();
    const out = await report(key, scheduled.message_id);
    assert.notEqual(out.status, 'scheduled');
    assert.equal(out.credits_used, 6);
    assert.equal(await balance(key), 94, 'its release charged nothing more');
    assert.equal((await send(key, '+447911123456')).json().credits_used, 22, 'a new send pays the new price');
    const ledger = await h.ctx.store.db.selectFrom('credit_ledger').select(['kind', 'amount']).where('account_id', '=', accountId).orderBy('id').execute();
    assert.deepEqual(ledger.map((l) => [l.kind, Number(l.amount)]), [['topup', 100], ['debit', -6], ['debit', -6], ['debit', -9], ['refund', 6], ['refund', 9], ['debit', -22]]);
    const { balance: b, ledger: sum } = await ledgerMatchesBalance(h.ctx, accountId);
    assert.equal(b, sum);
  });

  test('a free destination (price 0) is sent and never refunded', async () => {
    await importCard(h.ctx, 'free', 'prefix,credits_per_segment\n+,0\n');
    const { key } = await pricedCustomer(0, 'free');
    const res = await send(key, '+447911112222');
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().credits_used, 0);
    await h.workers.drain();
    assert.equal((await report(key, res.json().message_id)).status, 'failed');
    assert.equal(await balance(key), 0);
  });

  test('the campaign composer\'s preview costs each row at its price and lists unpriced and blocked rows as invalid', async () => {
    const { accountId } = await pricedCustomer(100);
    const file = 'phone,name\n+441632960001,Ann\n+447912345678,Bob\n+12025550143,Cy\n+447700900123,Di\n';
    async function* source() {
      yield file;
    }
    const draft = await readCampaign(h.ctx, accountId, { sender: 'Acme', template: 'Hello {name}' }, source(), { purpose: 'preview' });
    assert.equal(draft.messages, 2);
    assert.equal(draft.credits, 3 + 5, '+44 at 3 and +447 at 5, one segment each');
    assert.deepEqual(draft.invalid.map((r) => [r.line, r.to]), [[3, '+447912345678'], [4, '+12025550143']]);
    assert.match(draft.invalid[0]!.reason, /blocked/);
    assert.match(draft.invalid[1]!.reason, /no price/);
  });
});
