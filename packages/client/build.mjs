#!/usr/bin/env node
// Compiles src/ to dist/esm (ES modules) and dist/cjs (CommonJS), each with its .d.ts files.
// dist/cjs gets a package.json saying "commonjs", since the package itself is "type": "module".
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
let tsc;
try {
  tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
} catch {
  // A production install (`npm ci --omit=dev`, as in the Dockerfile) has no TypeScript, and the
  // server does not need the client; only packing it must not go ahead without a build.
  if (process.env.npm_command === 'pack' || process.env.npm_command === 'publish') throw new Error('TypeScript is needed to build @pigeon-sms/client');
  console.warn('@pigeon-sms/client: TypeScript is not installed (a production install), so the client is not built.');
  process.exit(0);
}
rmSync(join(here, 'dist'), { recursive: true, force: true });
for (const config of ['tsconfig.build.json', 'tsconfig.cjs.json']) {
  const result = spawnSync(process.execPath, [tsc, '-p', join(here, config)], { stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
// tsc rewrites `./x.ts` to `./x.js` in the JavaScript but not in the declarations; a consumer's
// compiler looks for `./x.js` (and finds `./x.d.ts` beside it), so the declarations say `.js` too.
for (const dir of ['dist/esm', 'dist/cjs']) {
  for (const name of readdirSync(join(here, dir)).filter((n) => n.endsWith('.d.ts'))) {
    const path = join(here, dir, name);
    writeFileSync(path, readFileSync(path, 'utf8').replace(/(from\s+'\.{1,2}\/[^']+)\.ts'/g, "$1.js'"));
  }
}
mkdirSync(join(here, 'dist/cjs'), { recursive: true });
writeFileSync(join(here, 'dist/cjs/package.json'), '{"type":"commonjs"}\n');
