/** Multi-row inserts: the SQL of any row count as Kysely writes it, every row written once, taken keys skipped. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CreditLedgerTable } from '../../src/store/database.ts';
import { insertRows, insertSqlFor } from '../../src/store/insert-rows.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { addAccount } from './fixtures.ts';

const row = (i: number): CreditLedgerTable => ({ id: `led_${String(i).padStart(5, '0')}`, account_id: 'acc_1', amount: -(i + 1), kind: 'debit', reference: i % 3 ? `msg_${i}` : null, note: null, created_at: 1000 + i });

describe('multi-row inserts', () => {
  forEachDialect((_dialect, open) => {
    it('writes the SQL of any row count as Kysely compiles it, with and without skipping taken keys', async () => {
      const store = await open();
      const columns = Object.keys(row(0));
      for (const n of [1, 2, 3, 7, 64]) {
        for (const skip of [false, true]) {
          const insert = store.db.insertInto('credit_ledger').values(Array.from({ length: n }, (_, i) => row(i)));
          const kysely = (skip ? insert.onConflict((oc) => oc.doNothing()) : insert).compile().sql;
          assert.equal(insertSqlFor(store.db, 'credit_ledger', columns, n, skip), kysely, `${n} rows, skip ${skip}`);
        }
      }
    });

    it('writes every row of a batch of any size once, with its values, and skips taken keys when asked', async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      // 1,337 rows: more than one chunk of the parameter limit's, and on SQLite many powers of two.
      const rows = Array.from({ length: 1337 }, (_, i) => row(i));
      await store.db.transaction().execute((trx) => insertRows(trx, 'credit_ledger', rows));
      const stored = await store.db.selectFrom('credit_ledger').selectAll().where('account_id', '=', 'acc_1').orderBy('id').execute();
      assert.deepEqual(
        stored.map((r) => ({ ...r, amount: Number(r.amount), created_at: Number(r.created_at) })),
        rows,
      );
      // A batch overlapping the stored rows: only the new ones are written, the taken ones left as they were.
      const more = Array.from({ length: 45 }, (_, i) => ({ ...row(1320 + i), note: 'again' }));
      await store.db.transaction().execute((trx) => insertRows(trx, 'credit_ledger', more, { skipExisting: true }));
      const notes = await store.db.selectFrom('credit_ledger').select(['id', 'note']).where('account_id', '=', 'acc_1').where('id', '>=', 'led_01320').orderBy('id').execute();
      assert.equal(notes.length, 45);
      assert.deepEqual(
        notes.map((r) => r.note),
        notes.map((r) => (r.id >= 'led_01337' ? 'again' : null)),
      );
    });
  });
});
