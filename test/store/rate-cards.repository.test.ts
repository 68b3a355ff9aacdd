import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { loadConfig } from '../../src/config/config.ts';
import type { RateCardEntriesTable } from '../../src/store/database.ts';
import {
  accountRateCard,
  listRateCards,
  rateCardEntries,
  rateCardExists,
  readRateCardRevision,
  setAccountRateCard,
  writeRateCardEntries,
} from '../../src/store/repositories/rate-cards.repository.ts';
import { importCard } from '../../src/services/pricing/rate-cards.ts';
import { priceRule } from '../../src/services/pricing/pricing.ts';
import type { Context } from '../../src/services/context.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { addAccount } from './fixtures.ts';

const price = (card: string, prefix: string, credits: number, at: number): RateCardEntriesTable => ({ card, prefix, effective_from: at, kind: 'price', credits_per_segment: credits });
const removed = (card: string, prefix: string, at: number): RateCardEntriesTable => ({ card, prefix, effective_from: at, kind: 'removed', credits_per_segment: null });

forEachDialect((_dialect, open) => {
  test('rate cards: the default card, dated entries, superseded rows dropped, the revision moved by every change', async () => {
    const store = await open();
    assert.deepEqual(await rateCardEntries(store.db, 'default'), [price('default', '+', 1, 0)]);
    const r0 = await readRateCardRevision(store.db);

    await store.db.transaction().execute((trx) => writeRateCardEntries(trx, 'gold', [price('gold', '+44', 3, 100), price('gold', '+33', 2, 100)], 100, 100));
    assert.ok(await rateCardExists(store.db, 'gold'));
    assert.equal(await readRateCardRevision(store.db), r0 + 1);
    // A dated change and a dated removal are kept beside what is in effect.
    await store.db.transaction().execute((trx) => writeRateCardEntries(trx, 'gold', [price('gold', '+44', 4, 500), removed('gold', '+33', 500)], 500, 200));
    const sorted = async () => (await rateCardEntries(store.db, 'gold')).sort((a, b) => (a.prefix + a.effective_from < b.prefix + b.effective_from ? -1 : 1));
    assert.deepEqual(await sorted(), [price('gold', '+33', 2, 100), removed('gold', '+33', 500), price('gold', '+44', 3, 100), price('gold', '+44', 4, 500)]);
    // Once they are in effect, the rows they supersede go, and so does the removal.
    await store.db.transaction().execute((trx) => writeRateCardEntries(trx, 'gold', [price('gold', '+49', 1, 600)], 600, 600));
    assert.deepEqual(await sorted(), [price('gold', '+44', 4, 500), price('gold', '+49', 1, 600)]);
    // The same prefix and date again replaces the entry.
    await store.db.transaction().execute((trx) => writeRateCardEntries(trx, 'gold', [price('gold', '+49', 2, 600)], 600, 600));
    assert.deepEqual((await sorted()).at(-1), price('gold', '+49', 2, 600));

    await addAccount(store, 'acc_a');
    assert.equal(await accountRateCard(store.db, 'acc_a'), 'default');
    assert.equal(await accountRateCard(store.db, 'nobody'), undefined);
    const before = await readRateCardRevision(store.db);
    assert.equal(await setAccountRateCard(store.db, 'acc_a', 'gold'), true);
    assert.equal(await readRateCardRevision(store.db), before + 1);
    assert.equal(await accountRateCard(store.db, 'acc_a'), 'gold');
    assert.deepEqual(
      (await listRateCards(store.db)).map((c) => [c.name, c.entries, c.accounts]),
      [['default', 1, 0], ['gold', 2, 1]],
    );
    await store.close();
  });

  test('a card of 100,000 prefixes imports in seconds and prices a number at once', async () => {
    const store = await open();
    const ctx: Context = { store, config: loadConfig({ DATABASE_URL: 'sqlite::memory:' }), clock: () => 1_000, log: pino({ level: 'silent' }), wake: () => {} };
    let csv = 'prefix,credits_per_segment\n';
    for (let i = 0; i < 100_000; i++) csv += `+${1_000_000 + i},${1 + (i % 7)}\n`;
    let started = performance.now();
    const first = await importCard(ctx, 'big', csv);
    const importMs = performance.now() - started;
    assert.equal(first.diff.added.length, 100_000);
    // Seconds on a quiet machine; the bound only catches a row-by-row write (minutes), not a busy machine.
    assert.ok(importMs < 30_000, `import took ${importMs.toFixed(0)} ms`);
    // Everything again, every price raised by one: 100,000 rows replaced.
    started = performance.now();
    const raised = await importCard(ctx, 'big', csv.replace(/,(\d)\n/g, (_, d: string) => `,${Number(d) + 1}\n`));
    assert.equal(raised.diff.raised.length, 100_000);
    assert.ok(performance.now() - started < 30_000);
    assert.equal((await rateCardEntries(store.db, 'big')).length, 100_000, 'the superseded rows are gone');

    await addAccount(store, 'acc_big');
    await importCard(ctx, 'big', 'prefix,credits_per_segment\n+,1\n');
    await setAccountRateCard(store.db, 'acc_big', 'big');
    const rule = await priceRule(ctx, 'acc_big');
    assert.deepEqual(rule('+1000042555123'), { ok: true, creditsPerSegment: 1 + (42 % 7) + 1 });
    assert.deepEqual(rule('+449999999999'), { ok: true, creditsPerSegment: 1 });
    await store.close();
  });
});
