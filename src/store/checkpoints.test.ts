import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { openStore } from './connect.ts';

const dir = mkdtempSync(join(tmpdir(), 'pigeon-checkpoints-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('a long-running process checkpoints the WAL from its background thread, not in its commits', async () => {
  const path = join(dir, 'c.db');
  const store = openStore(`sqlite:${path}`);
  try {
    store.startBackgroundCheckpoints!();
    await sql`create table filler (id integer primary key, body text)`.execute(store.db);
    // About 3 MiB in one commit: far below the writer's own checkpoint threshold, so until a
    // checkpoint copies them the pages live only in the WAL and the database file stays small.
    await store.db.transaction().execute(async (trx) => {
      for (let i = 0; i < 3000; i++) await sql`insert into filler (body) values (${'x'.repeat(1000)})`.execute(trx);
    });
    const deadline = Date.now() + 5000;
    while (statSync(path).size < 3_000_000 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.ok(statSync(path).size >= 3_000_000, `the database file holds the rows (${statSync(path).size} bytes)`);
  } finally {
    await store.close();
  }
});
