#!/usr/bin/env node
// Runs every *.test.ts under src/ and test/ with node's test runner through tsx.
// Node 20's runner does not expand globs itself, so the files are listed here.
// Usage: node scripts/run-tests.mjs [dir-or-file ...]   (default: src test/api test/cli test/store)
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

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

const roots = process.argv.slice(2);
const files = (roots.length ? roots : ['src', 'test/api', 'test/cli', 'test/store']).flatMap((r) => find(r, [])).sort();
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', ...files], { stdio: 'inherit' });
process.exit(result.status ?? 1);
