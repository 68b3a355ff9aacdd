#!/usr/bin/env node
// The end of a CI run: the slowest test files over every stage, and the tests counted over every
// run as one closing line. Reads what scripts/run-tests.mjs appended to CI_TEST_LOG.
// Usage: node scripts/ci-summary.mjs LOG
import { existsSync, readFileSync } from 'node:fs';

const path = process.argv[2];
const records = path && existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line)) : [];

const files = records.filter((r) => r.file).sort((a, b) => b.ms - a.ms).slice(0, 20);
if (files.length > 0) {
  console.log(`\n::: slowest ${files.length} test files (seconds, wall time; a guide, not a gate)`);
  for (const { stage, file, ms } of files) console.log(`${(ms / 1000).toFixed(1).padStart(8)}  ${file}  (${stage})`);
}

const count = { passed: 0, failed: 0, skipped: 0, todo: 0 };
const byStage = new Map();
for (const { stage, result } of records) {
  if (!result) continue;
  count[result]++;
  const s = byStage.get(stage) ?? { passed: 0, failed: 0, skipped: 0, todo: 0 };
  s[result]++;
  byStage.set(stage, s);
}
console.log('\n::: tests by stage');
for (const [stage, s] of byStage) console.log(`${String(s.passed).padStart(6)} passed, ${s.failed} failed, ${s.skipped} skipped  ${stage}`);
console.log(`\ntests: ${count.passed} passed, ${count.failed} failed, ${count.skipped} skipped`);
