import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from './sqlite-driver.mjs';
import { CompiledQuery } from 'kysely';
import { ReadPool } from './read-pool.ts';

describe('ReadPool', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-read-pool-'));
  const path = join(dir, 'pool.db');
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.exec('create table t (id integer primary key, name text)');
  const pool = new ReadPool(path, 2);
  after(async () => {
    await pool.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('runs queries on reader threads and sees every committed write', async () => {
    const insert = db.prepare('insert into t (name) values (?)');
    for (let i = 0; i < 20; i++) {
      insert.run(`n${i}`);
      const rows = await Promise.all([0, 1, 2].map(() => pool.all<{ n: number }>(CompiledQuery.raw('select count(*) as n from t where name like ?', ['n%']))));
      assert.deepEqual(rows.map((r) => r[0]!.n), [i + 1, i + 1, i + 1]);
    }
  });

  test('an SQL error is the query\'s, with its code; the pool goes on', async () => {
    await assert.rejects(pool.all(CompiledQuery.raw('select * from missing', [])), (err: Error & { code?: string }) => err.code === 'SQLITE_ERROR' && /no such table/.test(err.message));
    assert.equal((await pool.all<{ id: number }>(CompiledQuery.raw('select id from t where id = ?', [1])))[0]!.id, 1);
  });

  test('reader threads cannot write', async () => {
    await assert.rejects(pool.all(CompiledQuery.raw("insert into t (name) values ('x') returning id", [])), /readonly/);
    assert.equal((db.prepare('select count(*) as n from t').get() as { n: number }).n, 20);
  });
});
