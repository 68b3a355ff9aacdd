/**
 * Debits under contention, through the HTTP interface: 1,000 sends at once on one account (and a
 * second account in the same groups), some with an Idempotency-Key (they take the general
 * transaction on PostgreSQL, the others one statement per group), against a balance that covers
 * only part of them. Nothing may be lost or counted twice: the balance, the ledger, the stored
 * messages, the dispatch jobs and the balances the answers report must all agree exactly.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';
import { ledgerMatchesBalance } from '../../src/services/accounts/accounts.ts';
import { queueDepth } from '../../src/store/repositories/jobs.repository.ts';
import { listLedger } from '../../src/store/repositories/ledger.repository.ts';

describe('1,000 concurrent sends on one account', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  test('exact balance and ledger: every accepted send debited once, every refused one not at all', async () => {
    const CREDITS = 700;
    const busy = await h.customer({ credits: CREDITS });
    const other = await h.customer({ credits: 5_000, sender: 'Other' });
    const send = (key: string, from: string, i: number, idempotent: boolean) =>
      h.request('POST', '/v1/sms/send', {
        key,
        body: { to: `+4479111${String(i % 100_000).padStart(5, '0')}`, from, message: `race ${i}` },
        ...(idempotent ? { headers: { 'idempotency-key': `k-${from}-${i}` } } : {}),
      });
    const results = await Promise.all([
      ...Array.from({ length: 1000 }, (_, i) => send(busy.key, 'Acme', i, i % 10 === 0)),
      ...Array.from({ length: 200 }, (_, i) => send(other.key, 'Other', i, i % 7 === 0)),
    ]);
    const mine = results.slice(0, 1000);
    const theirs = results.slice(1000);

    const ok = mine.filter((r) => r.statusCode === 200);
    const refused = mine.filter((r) => r.statusCode === 422);
    assert.equal(ok.length + refused.length, 1000, 'every answer is 200 or 422');
    assert.equal(ok.length, CREDITS, 'exactly as many sends as the balance covers');
    for (const r of refused) assert.equal(r.json().code, 'insufficient_credits');
    // Each accepted send saw the balance after its own debit: 699, 698, …, 0, each exactly once.
    const remaining = ok.map((r) => r.json().credits_remaining as number).sort((a, b) => a - b);
    assert.deepEqual(remaining, Array.from({ length: CREDITS }, (_, i) => i));
    assert.equal(new Set(ok.map((r) => r.json().message_id)).size, CREDITS);

    const { balance, ledger } = await ledgerMatchesBalance(h.ctx, busy.accountId);
    assert.equal(balance, 0);
    assert.equal(ledger, 0);
    const rows = await listLedger(h.ctx.store.db, busy.accountId, 5000, 0);
    const debits = rows.filter((r) => r.kind === 'debit');
    assert.equal(debits.length, CREDITS, 'one ledger row per accepted send');
    assert.deepEqual(new Set(debits.map((r) => r.reference)), new Set(ok.map((r) => r.json().message_id)), 'each row names its message');
    assert.ok(debits.every((r) => Number(r.amount) === -1));

    assert.ok(theirs.every((r) => r.statusCode === 200), 'the other account is not failed by its neighbour');
    const otherState = await ledgerMatchesBalance(h.ctx, other.accountId);
    assert.deepEqual(otherState, { balance: 4800, ledger: 4800 });

    const stored = await h.request('GET', '/v1/sms/delivery-reports?limit=1', { key: busy.key });
    assert.equal(stored.json().pagination.total, CREDITS, 'one stored message per credit spent');
    assert.equal((await queueDepth(h.ctx.store.db, 'dispatch', h.clock.now())).depth, CREDITS + 200, 'one dispatch job per accepted message');

    // Replays of the idempotent sends answer as the first time and debit nothing more.
    const replay = await send(busy.key, 'Acme', 0, true);
    assert.equal(replay.statusCode, mine[0]!.statusCode);
    assert.deepEqual(replay.json(), mine[0]!.json());
    assert.equal((await ledgerMatchesBalance(h.ctx, busy.accountId)).balance, 0);
  });
});
