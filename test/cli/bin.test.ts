/**
 * What depends on the Node that runs Pigeon: bin/pigeon's V8 setting must be one this Node knows
 * (an unknown flag prints a warning at every start), and the SQLite driver must be the one meant
 * for this Node (better-sqlite3 13 from Node 22 on, 12 on Node 20: src/store/sqlite-driver.mjs).
 * .ci/run runs this file on Node 20, 22 and 24.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import Database from '../../src/store/sqlite-driver.mjs';

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const major = Number(process.versions.node.split('.')[0]);

test('bin/pigeon starts without a warning: the V8 setting it makes is one this Node knows', async () => {
  const { stdout, stderr } = await run('./bin/pigeon', ['--help'], { env: { ...process.env, NODE_OPTIONS: '' } });
  assert.equal(stderr, '');
  assert.match(stdout, /^Usage: pigeon/m);
});

test(`the SQLite driver is the one for Node ${major}, and it works`, () => {
  const expected = major >= 22 ? require('better-sqlite3-napi') : require('better-sqlite3');
  assert.equal(Database, expected, major >= 22 ? 'better-sqlite3 13 (better-sqlite3-napi)' : 'better-sqlite3 12');
  const db = new Database(':memory:');
  try {
    const row = db.prepare('select sqlite_version() as version, 6 * 7 as answer').get() as { version: string; answer: number };
    assert.equal(row.answer, 42);
    assert.match(row.version, /^3\.\d+\.\d+$/);
  } finally {
    db.close();
  }
});
