import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { StoreCondition, type StoreProblem } from './condition.ts';
import { openStore } from './connect.ts';

const dir = mkdtempSync(join(tmpdir(), 'pigeon-condition-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const errorWith = (code: string, message = 'x') => Object.assign(new Error(message), { code });

test('an unreachable PostgreSQL, a full or read-only disk are told apart from every other error', () => {
  const c = new StoreCondition();
  assert.equal(c.failureOf(errorWith('57P01', 'terminating connection due to administrator command')), 'unreachable');
  assert.equal(c.failureOf(errorWith('57P03', 'the database system is shutting down')), 'unreachable');
  assert.equal(c.failureOf(errorWith('08006')), 'unreachable');
  assert.equal(c.failureOf(errorWith('ECONNREFUSED')), 'unreachable');
  assert.equal(c.failureOf(errorWith('ECONNRESET')), 'unreachable');
  assert.equal(c.failureOf(new Error('Connection terminated unexpectedly')), 'unreachable');
  assert.equal(c.failureOf(new Error('timeout exceeded when trying to connect')), 'unreachable');
  assert.equal(c.failureOf(new AggregateError([errorWith('ECONNREFUSED'), errorWith('ECONNREFUSED')])), 'unreachable');
  assert.equal(c.failureOf(new Error('wrapped', { cause: errorWith('ECONNREFUSED') })), 'unreachable');
  assert.equal(c.failureOf(errorWith('25006', 'cannot execute INSERT in a read-only transaction')), 'standby');
  assert.equal(c.failureOf(errorWith('SQLITE_FULL')), 'full');
  assert.equal(c.failureOf(errorWith('SQLITE_READONLY_DBMOVED')), 'read_only');
  // Faults of the work itself, not of the store: a 500 or their own answer, never a 503.
  assert.equal(c.failureOf(errorWith('23505', 'duplicate key')), null);
  assert.equal(c.failureOf(errorWith('40P01', 'deadlock detected')), null);
  assert.equal(c.failureOf(errorWith('SQLITE_CONSTRAINT_UNIQUE')), null);
  assert.equal(c.failureOf(errorWith('SQLITE_ERROR', 'cannot rollback - no transaction is active')), null);
  assert.equal(c.failureOf(new TypeError('x is undefined')), null);
  // Without a folder to look at, an I/O error cannot be explained: it stays a failure of its own.
  assert.equal(c.failureOf(errorWith('SQLITE_IOERR_WRITE')), null);
});

test('a standby ends at a write, not at a read; an unreachable server at any answer', () => {
  const c = new StoreCondition();
  c.observe(errorWith('25006', 'cannot execute INSERT in a read-only transaction'));
  c.answered(false);
  assert.equal(c.problem?.failure, 'standby', 'a read on the standby proves nothing');
  c.answered(true);
  assert.equal(c.problem, null);
  c.observe(errorWith('ECONNREFUSED'));
  c.answered(false);
  assert.equal(c.problem, null);
});

test('a full SQLite file: the error is SQLITE_FULL (not the rollback after it), nothing of the transaction stays, and the first write after recovery ends the problem', async () => {
  const store = openStore(`sqlite:${join(dir, 'full.db')}`);
  const changes: (StoreProblem | null)[] = [];
  store.condition.onChange((p) => changes.push(p));
  try {
    await sql`create table filler (id integer primary key, body text)`.execute(store.db);
    const pages = Number((await sql<{ page_count: number }>`pragma page_count`.execute(store.db)).rows[0]!.page_count);
    // A page limit is a disk that is full for this file alone.
    await sql.raw(`pragma max_page_count = ${pages + 20}`).execute(store.db);
    const failed = await store.db
      .transaction()
      .execute(async (trx) => {
        for (let i = 0; i < 500; i++) await sql`insert into filler (body) values (${'x'.repeat(2000)})`.execute(trx);
      })
      .then(
        () => null,
        (err: unknown) => err as { code?: string },
      );
    assert.equal(failed?.code, 'SQLITE_FULL');
    assert.equal(store.condition.problem?.failure, 'full');
    const rows = await sql<{ n: number }>`select count(*) as n from filler`.execute(store.db);
    assert.equal(Number(rows.rows[0]!.n), 0, 'nothing of the failed transaction is stored');
    // Reads go on; they say nothing of the disk.
    assert.equal(store.condition.problem?.failure, 'full');
    await sql.raw('pragma max_page_count = 1073741823').execute(store.db);
    await store.db.transaction().execute(async (trx) => {
      await sql`insert into filler (body) values ('ok')`.execute(trx);
    });
    assert.equal(store.condition.problem, null);
    assert.deepEqual(
      changes.map((c) => c?.failure ?? null),
      ['full', null],
    );
  } finally {
    await store.close();
  }
});

test('while a disk problem stands, probe() ends it once the folder takes a file', async () => {
  const c = new StoreCondition(dir);
  c.observe(errorWith('SQLITE_FULL', 'database or disk is full'));
  assert.equal(c.problem?.failure, 'full');
  await c.probe();
  assert.equal(c.problem, null);
});
