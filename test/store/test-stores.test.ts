/**
 * The test helpers' stores (test/helpers/store-template.ts): on PostgreSQL a schema a store is
 * done with is the next store's, emptied; one whose tables a test changed is never used again.
 * A store that kept another test's rows, or lacked a table, would make other suites wrong.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { LATEST_MIGRATION, migrationsCurrent } from '../../src/store/migrate.ts';
import { onlyInRunOf, openTestStore } from '../helpers/test-store.ts';

const skip = onlyInRunOf('postgres') || (process.env.TEST_RUN_ID ? false : 'needs the runner (TEST_RUN_ID)');

test('a store after another is empty, migrated, with the migrations’ own rows', { skip }, async () => {
  const first = await openTestStore();
  const schema = (await sql<{ s: string }>`select current_schema() as s`.execute(first.db)).rows[0]!.s;
  await sql`insert into verify_safe_list (account_id, entry, created_at) values ('acc_x', '+447700900001', 1)`.execute(first.db);
  await first.close();
  const second = await openTestStore();
  try {
    assert.equal((await sql<{ s: string }>`select current_schema() as s`.execute(second.db)).rows[0]!.s, schema, 'the same schema, used again');
    assert.equal(Number((await sql<{ n: string }>`select count(*) as n from verify_safe_list`.execute(second.db)).rows[0]!.n), 0, 'the rows of the store before are gone');
    assert.ok(await migrationsCurrent(second.db), `migrated up to ${LATEST_MIGRATION}`);
    const cards = await sql<{ name: string }>`select name from rate_cards`.execute(second.db);
    assert.deepEqual(cards.rows.map((r) => r.name), ['default'], 'the rows the migrations put in are back');
  } finally {
    await second.close();
  }
});

test('a store whose tables a test changed is dropped, not given to the next', { skip }, async () => {
  const broken = await openTestStore();
  const schema = (await sql<{ s: string }>`select current_schema() as s`.execute(broken.db)).rows[0]!.s;
  await broken.db.schema.dropTable('batches').execute();
  await broken.close();
  const next = await openTestStore();
  try {
    assert.notEqual((await sql<{ s: string }>`select current_schema() as s`.execute(next.db)).rows[0]!.s, schema);
    await sql`select count(*) from batches`.execute(next.db);
  } finally {
    await next.close();
  }
});
