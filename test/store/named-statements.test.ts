/**
 * Statements marked NAMED_MARKER (the fraud guard's read, a group's checks, the admission locks):
 * on PostgreSQL named statements of their connection, inside transactions as out of them, with the
 * same answers as unnamed ones; a schema change under a named statement fails it once, and its next
 * run is prepared afresh.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { named } from '../../src/store/connect.ts';
import { forEachDialect } from '../helpers/dialects.ts';

forEachDialect((dialect, open) => {
  test('a marked statement answers as an unmarked one, in a transaction too; on PostgreSQL by name', async () => {
    const store = await open();
    await sql`create table named_things (id integer primary key, label text)`.execute(store.db);
    await sql`insert into named_things (id, label) values (1, 'one'), (2, 'two'), (3, 'three')`.execute(store.db);
    const labels = async (db: typeof store.db, ids: number[]) =>
      (await sql<{ label: string }>`${named}select label from named_things where id >= ${ids[0]} and id <= ${ids[1]} order by id`.execute(db)).rows.map((r) => r.label);
    for (let i = 0; i < 3; i++) assert.deepEqual(await labels(store.db, [1, 2]), ['one', 'two']);
    await store.db.transaction().execute(async (trx) => {
      assert.deepEqual(await labels(trx as never, [2, 3]), ['two', 'three']);
      assert.deepEqual(await labels(trx as never, [3, 9]), ['three']);
      if (dialect !== 'postgres') return;
      // The transaction's connection holds the statement by its name.
      const { rows } = await sql<{ name: string }>`select name from pg_prepared_statements where statement like '/* named */%named_things%'`.execute(trx);
      assert.equal(rows.length, 1);
      assert.match(rows[0]!.name, /^pigeon_named_\d+$/);
    });
  });

  test('a schema change under a named statement fails one run of it, then it is prepared again', { skip: dialect !== 'postgres' && 'PostgreSQL keeps the plans' }, async () => {
    const store = await open();
    await sql`create table named_changed (id integer primary key)`.execute(store.db);
    await sql`insert into named_changed (id) values (1)`.execute(store.db);
    // One connection throughout, as a transaction has it.
    await store.db.connection().execute(async (db) => {
      const all = async () => (await sql<Record<string, unknown>>`${named}select * from named_changed where id = ${1}`.execute(db)).rows;
      assert.deepEqual(await all(), [{ id: 1 }]);
      await sql`alter table named_changed add column label text`.execute(db);
      await assert.rejects(all(), (err: { code?: string }) => err.code === '0A000');
      assert.deepEqual(await all(), [{ id: 1, label: null }]);
    });
    // The reads every request makes (`readRow`) are named the same way, and recover the same way.
    await sql`create table named_read (id integer primary key)`.execute(store.db);
    await sql`insert into named_read (id) values (1)`.execute(store.db);
    const read = () => store.readRow!<Record<string, unknown>>('select * from named_read where id = $1', [1]);
    // Read on every connection of the pool, so that each holds the statement.
    await Promise.all(Array.from({ length: 10 }, async () => assert.deepEqual(await read(), { id: 1 })));
    await sql`alter table named_read add column label text`.execute(store.db);
    // Refused at most once (the connection that held the old plan), then prepared afresh.
    for (let refused = 0; ; ) {
      try {
        assert.deepEqual(await read(), { id: 1, label: null });
        break;
      } catch (err) {
        if ((err as { code?: string }).code !== '0A000' || ++refused > 1) throw err;
      }
    }
  });
});
