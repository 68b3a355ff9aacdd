import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';
import { ledgerMatchesBalance } from '../../src/services/accounts/accounts.ts';

describe('credits', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  test('many parallel sends against a small balance: exactly the balance is spent, never below zero', async () => {
    const { key, accountId } = await h.customer({ credits: 25 });
    const sends = Array.from({ length: 80 }, (_, i) =>
      h.request('POST', '/v1/sms/send', { key, body: { to: `+4479111${String(i).padStart(5, '0')}`, from: 'Acme', message: 'race' } }),
    );
    const bulks = Array.from({ length: 10 }, () =>
      h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', messages: [{ to: '+447911123456', message: 'a' }, { to: '+447911123457', message: 'b' }] } }),
    );
    const results = await Promise.all([...sends, ...bulks]);
    const ok = results.filter((r) => r.statusCode === 200);
    const refused = results.filter((r) => r.statusCode === 422);
    assert.equal(ok.length + refused.length, results.length, 'every answer is 200 or 422');
    const spent = ok.reduce((n, r) => n + r.json().credits_used, 0);
    assert.equal(spent, 25);
    const { balance, ledger } = await ledgerMatchesBalance(h.ctx, accountId);
    assert.equal(balance, 0);
    assert.equal(ledger, 0);
    const stored = await h.request('GET', '/v1/sms/delivery-reports?limit=200', { key });
    assert.equal(stored.json().pagination.total, 25, 'one stored message per credit spent');
  });

  test('sends committed together keep their own outcomes: each sees its own balance, a poor account does not fail a rich one', async () => {
    const rich = await h.customer({ credits: 100 });
    const poor = await h.customer({ credits: 1 });
    const body = { to: '+447911123456', from: 'Acme', message: 'together' };
    const results = await Promise.all([
      ...Array.from({ length: 10 }, () => h.request('POST', '/v1/sms/send', { key: rich.key, body })),
      ...Array.from({ length: 3 }, () => h.request('POST', '/v1/sms/send', { key: poor.key, body })),
    ]);
    const richAnswers = results.slice(0, 10).map((r) => r.json());
    assert.ok(richAnswers.every((b) => b.status === 'success'));
    assert.deepEqual(richAnswers.map((b) => b.credits_remaining).sort((x, y) => y - x), [99, 98, 97, 96, 95, 94, 93, 92, 91, 90]);
    assert.deepEqual(results.slice(10).map((r) => r.statusCode).sort(), [200, 422, 422]);
    for (const c of [rich, poor]) {
      const { balance, ledger } = await ledgerMatchesBalance(h.ctx, c.accountId);
      assert.equal(balance, ledger);
    }
  });

  test('a message the carrier rejects before it is sent is refunded; the ledger shows every change', async () => {
    const { key, accountId } = await h.customer({ credits: 10 });
    const res = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911112222', from: 'Acme', message: 'x'.repeat(200) } });
    assert.equal(res.json().credits_remaining, 8);
    await h.workers.drain();
    const report = (await h.request('GET', `/v1/sms/delivery-reports?message_id=${res.json().message_id}`, { key })).json().data[0];
    assert.equal(report.status, 'failed');
    assert.equal(report.error_code, 'carrier_rejected');
    assert.equal(report.sent_at, null);
    assert.equal((await h.request('GET', '/v1/account', { key })).json().data.credits_remaining, 10);
    const kinds = await h.ctx.store.db.selectFrom('credit_ledger').select(['kind', 'amount']).where('account_id', '=', accountId).orderBy('id').execute();
    assert.deepEqual(kinds.map((k) => [k.kind, Number(k.amount)]), [
      ['topup', 10],
      ['debit', -2],
      ['refund', 2],
    ]);
    const { balance, ledger } = await ledgerMatchesBalance(h.ctx, accountId);
    assert.equal(balance, ledger);
  });

  test('a message that fails after it was sent is not refunded', async () => {
    const { key } = await h.customer({ credits: 10 });
    await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911110000', from: 'Acme', message: 'hi' } });
    await h.workers.drain();
    h.clock.advance(1000);
    await h.workers.drain();
    const report = (await h.request('GET', '/v1/sms/delivery-reports', { key })).json().data[0];
    assert.equal(report.status, 'failed');
    assert.equal((await h.request('GET', '/v1/account', { key })).json().data.credits_remaining, 9);
  });
});
