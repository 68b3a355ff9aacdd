import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { loadConfig } from '../config/config.ts';
import { openStore } from './connect.ts';

const dir = mkdtempSync(join(tmpdir(), 'pigeon-synchronous-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('SQLITE_SYNCHRONOUS chooses how a SQLite commit is synced: normal by default, full on request, nothing else', async () => {
  assert.equal(loadConfig({}).sqliteSynchronous, 'normal');
  assert.equal(loadConfig({ SQLITE_SYNCHRONOUS: 'full' }).sqliteSynchronous, 'full');
  assert.throws(() => loadConfig({ SQLITE_SYNCHRONOUS: 'off' }), /SQLITE_SYNCHRONOUS/);
  for (const [synchronous, level] of [[undefined, 1], ['normal', 1], ['full', 2]] as const) {
    const store = openStore(`sqlite:${join(dir, `${synchronous}.db`)}`, synchronous ? { synchronous } : {});
    try {
      const { rows } = await sql<{ synchronous: number }>`pragma synchronous`.execute(store.db);
      assert.equal(rows[0]!.synchronous, level, String(synchronous));
    } finally {
      await store.close();
    }
  }
});
