#!/usr/bin/env node
// Runs every *.test.ts under src/ and test/ with node's test runner through tsx.
// Node 20's runner does not expand globs itself, so the files are listed here.
// Usage: node scripts/run-tests.mjs [--pg] [dir-or-file ...]
// --pg runs the same tests against PostgreSQL: TEST_DATABASE_URL, by default the local `test` database.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

// Default test roots; `npm test` runs these.
const DEFAULT_ROOTS = ['src', 'test/api', 'test/cli', 'test/smpp', 'packages/client/test', 'test/crash', 'test/security', 'test/docs', 'test/store', 'test/multiprocess'];

function find(path, out) {
  if (statSync(path).isFile()) {
    if (path.endsWith('.test.ts')) out.push(path);
    return out;
  }
  for (const entry of readdirSync(path)) {
    if (entry === 'node_modules') continue;
    find(join(path, entry), out);
  }
  return out;
}

const args = process.argv.slice(2);
const env = { ...process.env };
// Test files run in parallel and many start `pigeon serve`: none may take the SMPP listener's
// fixed default port; a test of the listener names a free port of its own.
env.SMPP_SERVER_PORT ??= '0';
const pg = args[0] === '--pg';
if (pg) {
  args.shift();
  env.TEST_DATABASE_URL ||= 'postgres://postgres@127.0.0.1:5432/test';
}
// test/multiprocess: the scheduled release runs on both databases; the scale-out test skips
// itself without PostgreSQL.
const roots = args.length ? args : DEFAULT_ROOTS;
const files = roots.filter((r) => existsSync(r)).flatMap((r) => find(r, [])).sort();
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', ...files], { stdio: 'inherit', env });
process.exit(result.status ?? 1);
