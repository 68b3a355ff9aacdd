/**
 * A write on SQLite that finds another connection holding the write lock (`serve`'s delivery
 * process, the CLI) waits for it without blocking the event loop, and then goes through.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type Kysely } from 'kysely';
import SqliteDatabase from './sqlite-driver.mjs';
import { openStore } from './connect.ts';
import type { Database } from './database.ts';

const dir = mkdtempSync(join(tmpdir(), 'pigeon-busy-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('a transaction and a single write wait for another connection\'s lock while the event loop goes on', async () => {
  const path = join(dir, 'busy.db');
  const store = openStore(`sqlite:${path}`);
  const other = new SqliteDatabase(path);
  try {
    await sql`create table t (id integer primary key, v text)`.execute(store.db);
    const writes: [string, (db: Kysely<Database>) => Promise<unknown>][] = [
      ['a transaction', (db) => db.transaction().execute((trx) => sql`insert into t (v) values ('mine, in a transaction')`.execute(trx))],
      ['a single statement', (db) => sql`insert into t (v) values ('mine, alone')`.execute(db)],
    ];
    for (const [what, write] of writes) {
      other.exec('begin immediate');
      other.exec("insert into t (v) values ('theirs')");
      // The other connection lets go 100 ms from now, from this same event loop: a write that
      // blocked the loop while it waited would never see that, and fail with SQLITE_BUSY.
      let ticks = 0;
      const ticker = setInterval(() => ticks++, 5);
      setTimeout(() => other.exec('commit'), 100);
      try {
        await write(store.db);
      } finally {
        clearInterval(ticker);
      }
      // The 5 ms interval is due before the 100 ms commit, so it fires first whenever the loop
      // runs at all, however loaded the machine (a run beside the browser tests saw 2 ticks).
      assert.ok(ticks >= 1, `${what}: the loop ran while it waited (${ticks} ticks)`);
    }
    const rows = await sql<{ v: string }>`select v from t order by id`.execute(store.db);
    assert.deepEqual(rows.rows.map((r) => r.v), ['theirs', 'mine, in a transaction', 'theirs', 'mine, alone']);
  } finally {
    other.close();
    await store.close();
  }
});
