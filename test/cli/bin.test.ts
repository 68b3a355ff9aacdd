/**
 * What depends on the Node that runs Pigeon: bin/pigeon's V8 setting must be one this Node knows
 * (an unknown flag prints a warning at every start), and the SQLite driver must be the one meant
 * for this Node (better-sqlite3 13 from Node 22 on, 12 on Node 20: src/store/sqlite-driver.mjs).
 * bin/pigeon runs src/ as one bundle it builds on first use (bin/bundle.mjs), with tsx in its place
 * when it cannot. .ci/run runs this file on Node 20, 22 and 24.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import Database from '../../src/store/sqlite-driver.mjs';
// @ts-expect-error: plain JavaScript without declarations, run before any TypeScript loads.
import { sourceDigest } from '../../bin/bundle.mjs';

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

test('bin/pigeon builds and runs the bundle of its own tree, anew after a change, and tsx in its place answers the same', async () => {
  // A copy of the tree beside the real one, sharing its node_modules (and so its bundle cache).
  const copy = mkdtempSync(join(tmpdir(), 'pigeon-tree-'));
  const help = async (env: NodeJS.ProcessEnv = {}) => (await run(join(copy, 'bin', 'pigeon'), ['--help'], { cwd: copy, env: { ...process.env, ...env } })).stdout;
  const built: string[] = [];
  try {
    for (const part of ['bin', 'src', 'package.json']) cpSync(part, join(copy, part), { recursive: true });
    symlinkSync(resolve('node_modules'), join(copy, 'node_modules'));
    const main = join(copy, 'src', 'cli', 'main.ts');
    const describe = (words: string) => writeFileSync(main, readFileSync(main, 'utf8').replace(/\.description\('[^']*'\)/, `.description('${words}')`));

    describe('First words.');
    built.push(await bundleOf(copy));
    assert.ok(!existsSync(built[0]!), 'no bundle of this tree before it runs');
    assert.match(await help(), /^First words\.$/m);
    assert.ok(existsSync(built[0]!), 'the bundle of this tree, built by its first run');

    describe('Second words.');
    built.push(await bundleOf(copy));
    assert.notEqual(built[1], built[0]);
    assert.match(await help(), /^Second words\.$/m, 'the edited source, not the earlier bundle');
    assert.ok(existsSync(built[1]!));
    assert.equal(await help({ PIGEON_BUNDLE: 'off' }), await help());
  } finally {
    for (const entry of built) rmSync(dirname(entry), { recursive: true, force: true });
    rmSync(copy, { recursive: true, force: true });
  }
});

/** The bundle that `tree`'s bin/pigeon would run now. */
async function bundleOf(tree: string): Promise<string> {
  const { bundleEntry } = (await import(pathToFileURL(join(tree, 'bin', 'bundle.mjs')).href)) as { bundleEntry(): string };
  return bundleEntry();
}

test('the bundle is a new one after any source file changes, appears or goes', () => {
  const src = mkdtempSync(join(tmpdir(), 'pigeon-digest-'));
  try {
    writeFileSync(join(src, 'a.ts'), 'export const a = 1;\n');
    mkdirSync(join(src, 'deep'));
    writeFileSync(join(src, 'deep', 'b.ts'), 'export const b = 2;\n');
    const first = sourceDigest(src);
    assert.equal(sourceDigest(src), first);
    utimesSync(join(src, 'deep', 'b.ts'), new Date(), new Date(Date.now() + 5000));
    const touched = sourceDigest(src);
    assert.notEqual(touched, first);
    writeFileSync(join(src, 'deep', 'c.ts'), '');
    const added = sourceDigest(src);
    assert.notEqual(added, touched);
    rmSync(join(src, 'deep', 'c.ts'));
    assert.equal(sourceDigest(src), touched);
    // Tests are no part of what runs.
    writeFileSync(join(src, 'a.test.ts'), '');
    assert.equal(sourceDigest(src), touched);
  } finally {
    rmSync(src, { recursive: true, force: true });
  }
});
