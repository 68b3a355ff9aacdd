/**
 * The lookups every request makes (`preparedRead`): the row, or nothing, whatever the store; on
 * PostgreSQL a named statement of the connection, parsed and planned once rather than at every
 * run, and a failure still reported to the store's condition (the outage tracking).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { linkByCode } from '../../src/store/repositories/links.repository.ts';
import { preparedRead } from '../../src/store/prepared-statements.ts';
import { forEachDialect } from '../helpers/dialects.ts';

const NOW = 1_800_000_000_000;

const preparedCount = preparedRead((db, name: string) =>
  db.selectFrom('pg_prepared_statements' as never).select((eb) => eb.fn.countAll<number>().as('n')).where('name' as never, 'like', name as never),
);

forEachDialect((dialect, open) => {
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
