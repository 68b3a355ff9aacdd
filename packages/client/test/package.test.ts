/**
 * The client as its users get it: the repository's workspace link (`import ... from
 * '@pigeon-sms/client'`, as the README writes it), and the tarball `npm pack` makes, installed
 * into a plain Node project (no tsx, no TypeScript at run time) and used from CommonJS and ESM,
 * with its declarations checked by a consumer's compiler.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { liveServer, type LiveServer } from './server.ts';

const PACKAGE_DIR = resolve(fileURLToPath(new URL('..', import.meta.url)));
// The child processes get a plain Node: no tsx loader inherited through NODE_OPTIONS.
const env = { ...process.env, NODE_OPTIONS: '', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };

function run(command: string, args: string[], options: SpawnSyncOptions = {}): string {
  const result = spawnSync(command, args, { encoding: 'utf8', env, timeout: 120_000, ...options });
  assert.equal(result.status, 0, `${command} ${args.join(' ')} failed:\n${String(result.stdout)}\n${String(result.stderr)}`);
  return String(result.stdout);
}

describe('@pigeon-sms/client as a package', () => {
  let server: LiveServer;
  let work: string;
  let consumer: string;
  before(async () => {
    server = await liveServer();
    work = mkdtempSync(join(tmpdir(), 'pigeon-client-pack-'));
    consumer = join(work, 'consumer');
    // `npm pack` runs the package's `prepare` (the tsc build) before packing.
    run('npm', ['pack', '--pack-destination', work, '--silent'], { cwd: PACKAGE_DIR });
  });
  after(async () => {
    await server.close();
    rmSync(work, { recursive: true, force: true });
  });

  test('resolves by name inside the repository (npm workspaces)', async () => {
    const fromRepo = createRequire(join(PACKAGE_DIR, '..', '..', 'package.json'));
    assert.equal(fromRepo.resolve('@pigeon-sms/client'), join(PACKAGE_DIR, 'dist', 'cjs', 'index.js'));
    const mod = await import('@pigeon-sms/client');
    assert.equal(typeof mod.Pigeon, 'function');
    assert.equal(typeof mod.verifyWebhook, 'function');
  });

  test('the tarball holds JavaScript and declarations, not the TypeScript sources', () => {
    const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'));
    assert.ok(tarball, 'npm pack wrote a tarball');
    const listing = run('tar', ['-tzf', join(work, tarball)]).split('\n').filter(Boolean).sort();
    for (const f of ['package/dist/esm/index.js', 'package/dist/esm/index.d.ts', 'package/dist/cjs/index.js', 'package/dist/cjs/index.d.ts', 'package/dist/cjs/package.json', 'package/README.md']) {
      assert.ok(listing.includes(f), `${f} in ${listing.join(', ')}`);
    }
    assert.deepEqual(listing.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')), []);
  });

  test('a plain Node project installs the tarball offline and uses it from CommonJS and ESM', async () => {
    const tarball = join(work, readdirSync(work).find((f) => f.endsWith('.tgz'))!);
    mkdirSync(consumer, { recursive: true });
    writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }));
    run('npm', ['install', '--offline', '--no-save', '--no-package-lock', tarball], { cwd: consumer });

    const { key } = await server.h.customer({ credits: 7 });
    const cjs = `const { Pigeon, PigeonApiError } = require('@pigeon-sms/client');
new Pigeon({ apiKey: process.argv[2], baseUrl: process.argv[3] }).account.get()
  .then((r) => console.log(JSON.stringify({ credits: r.data.credits_remaining, error: typeof PigeonApiError })));`;
    const esm = `import { Pigeon, verifyWebhook } from '@pigeon-sms/client';
const r = await new Pigeon({ apiKey: process.argv[2], baseUrl: process.argv[3] }).account.get();
console.log(JSON.stringify({ credits: r.data.credits_remaining, verify: typeof verifyWebhook }));`;
    writeFileSync(join(consumer, 'use.cjs'), cjs);
    writeFileSync(join(consumer, 'use.mjs'), esm);
    // The network calls happen in the children, so these run asynchronously against the in-process server.
    const node = (file: string) =>
      new Promise<string>((done, fail) => {
        execFile(process.execPath, [file, key, server.baseUrl], { cwd: consumer, env, timeout: 60_000 }, (err, stdout, stderr) =>
          err ? fail(new Error(`${file}: ${err.message}\n${stderr}`)) : done(stdout),
        );
      });
    assert.deepEqual(JSON.parse(await node('use.cjs')), { credits: 7, error: 'function' });
    assert.deepEqual(JSON.parse(await node('use.mjs')), { credits: 7, verify: 'function' });
  });

  test("a TypeScript consumer type-checks against the package's declarations (ESM and CommonJS)", () => {
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    writeFileSync(
      join(consumer, 'check.mts'),
      `import { Pigeon, type SendResult } from '@pigeon-sms/client';
const p = new Pigeon({ apiKey: 'pk_live_x' });
export const f = async (): Promise<number> => (await p.account.get()).data.credits_remaining;
export const g = (r: SendResult): string => r.message_id;`,
    );
    writeFileSync(join(consumer, 'check.cts'), `import client = require('@pigeon-sms/client');
export const h = async (): Promise<string> => (await new client.Pigeon({ apiKey: 'k' }).senderIds.list()).status;`);
    writeFileSync(
      join(consumer, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', strict: true, noEmit: true, lib: ['ES2022', 'DOM'], types: [] }, files: ['check.mts', 'check.cts'] }),
    );
    run(process.execPath, [tsc, '-p', join(consumer, 'tsconfig.json')], { cwd: consumer });
  });
});
