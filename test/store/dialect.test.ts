import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dialectOf, isUniqueViolation } from '../../src/store/dialect.ts';
import { saveRouteIdSpelling } from '../../src/store/repositories/carrier-receipts.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';

forEachDialect((dialect, open) => {
  test('the dialect recorded at open is known to the store, its read connection and its transactions', async () => {
    const store = await open();
    assert.equal(store.dialect, dialect);
    assert.equal(dialectOf(store.db), dialect);
    assert.equal(dialectOf(store.read), dialect);
    assert.equal(await store.db.transaction().execute(async (trx) => dialectOf(trx)), dialect);
  });

  test("a duplicate key is recognised as a unique violation, other failures are not", async () => {
    const store = await open();
    await saveRouteIdSpelling(store.db, 'smsc-a', 'same', 1);
    const duplicate = await store.db
      .insertInto('carrier_routes')
      .values({ route: 'smsc-a', receipt_ids: 'same', updated_at: 2 })
      .execute()
      .then(() => null, (error: unknown) => error);
    assert.ok(duplicate, 'the duplicate was refused');
    assert.equal(isUniqueViolation(duplicate), true);
    const notNull = await store.db
      .insertInto('carrier_routes')
      .values({ route: 'smsc-b', receipt_ids: null as unknown as string, updated_at: 2 })
      .execute()
      .then(() => null, (error: unknown) => error);
    assert.ok(notNull);
    assert.equal(isUniqueViolation(notNull), false);
    assert.equal(isUniqueViolation(null), false);
  });
});
