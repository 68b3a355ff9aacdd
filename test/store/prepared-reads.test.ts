/**
 * The lookups every request makes (`preparedRead`): the row, or nothing, whatever the store; on
 * PostgreSQL a named statement of the connection, parsed and planned once rather than at every
 * run, and a failure still reported to the store's condition (the outage tracking). The reads a
 * transaction makes per item of a group (`preparedTransactionRead`): part of that transaction,
 * on SQLite's writer connection without the query builder.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { linkByCode } from '../../src/store/repositories/links.repository.ts';
import { preparedRead, preparedTransactionRead } from '../../src/store/prepared-statements.ts';
import { forEachDialect } from '../helpers/dialects.ts';

const NOW = 1_800_000_000_000;

const preparedCount = preparedRead((db, name: string) =>
  db.selectFrom('pg_prepared_statements' as never).select((eb) => eb.fn.countAll<number>().as('n')).where('name' as never, 'like', name as never),
);

const linkCount = preparedTransactionRead((db, accountId: string) =>
  db.selectFrom('links').select((eb) => eb.fn.countAll<number>().as('n')).where('account_id', '=', accountId),
);

forEachDialect((dialect, open) => {
  test('a read in a transaction sees its writes, and nothing of them once it is rolled back', async () => {
    const store = await open();
    const count = async (db: Parameters<typeof linkCount>[1]) => {
      const rows = await linkCount(store, db, 'acc_1');
      return Number(rows[0]!.n);
    };
    const link = (code: string) => ({ code, message_id: 'msg_1', batch_id: null, account_id: 'acc_1', url: 'https://127.0.0.1/x', created_at: NOW, clicks: 0, bot_clicks: 0, first_clicked_at: null });
    await store.db.insertInto('links').values(link('Abc12345')).execute();
    const seen = await store.db
      .transaction()
      .execute(async (trx) => {
        await trx.insertInto('links').values(link('Def12345')).execute();
        const inside = await count(trx);
        // On SQLite the read ran on the writer's connection, in the transaction, with nothing to wait for.
        if (dialect !== 'postgres') assert.ok(Array.isArray(linkCount(store, trx, 'acc_1')), 'answered synchronously');
        throw Object.assign(new Error('roll back'), { inside });
      })
      .catch((e: { inside?: number }) => e.inside);
    assert.equal(seen, 2);
    assert.equal(await store.db.transaction().execute((trx) => count(trx)), 1);
  });


  test('a prepared read answers its row or nothing, again and again', async () => {
    const store = await open();
    await store.db
      .insertInto('links')
      .values({ code: 'Abc12345', message_id: 'msg_1', batch_id: null, account_id: 'acc_1', url: 'https://127.0.0.1/x', created_at: NOW, clicks: 0, bot_clicks: 0, first_clicked_at: null })
      .execute();
    for (let i = 0; i < 3; i++) {
      assert.deepEqual(await linkByCode(store, 'Abc12345'), { code: 'Abc12345', url: 'https://127.0.0.1/x', created_at: NOW, message_id: 'msg_1' });
      assert.equal(await linkByCode(store, 'Zzz99999'), undefined);
    }
    if (dialect !== 'postgres') return;
    // Read one after another, the reads take the pool's last connection again: it holds the
    // statements by name.
    const row = (await preparedCount(store, 'pigeon_named_%')) as { n: number | string } | undefined;
    assert.ok(Number(row?.n) >= 2, `named statements on the connection: ${row?.n}`);
  });

  test('a prepared read that fails is reported to the store\'s condition', { skip: dialect !== 'postgres' && 'the outage tracking of a pool' }, async () => {
    const store = await open();
    const broken = preparedRead((db, code: string) => db.selectFrom('no_such_table' as never).selectAll().where('code' as never, '=', code as never));
    const seen: unknown[] = [];
    const observe = store.condition.observe.bind(store.condition);
    store.condition.observe = (err: unknown) => {
      seen.push(err);
      return observe(err);
    };
    await assert.rejects(broken(store, 'x'), /no_such_table/);
    assert.equal(seen.length, 1);
  });
});
