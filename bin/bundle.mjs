// The command line as JavaScript bundled from src/ by esbuild, kept under
// node_modules/.cache/pigeon. Loading ~270 TypeScript modules through tsx's loader costs a
// process about 1.3 s of CPU before it does anything (every module crosses to the loader's thread
// and back); the bundle loads in about 0.5 s. Every `pigeon` command and `pigeon serve` start
// pays this, so the bundle is what bin/pigeon runs, and tsx is the fallback.
//
// The bundle's name carries a digest of the path, size and modification time of every source
// file, so an edited, checked-out or upgraded tree gets a new bundle at its next start and never
// runs a stale one. The build takes about half a second; it is written to a temporary name and
// renamed, so processes starting together never read half a file.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SRC = join(ROOT, 'src');
const ENTRY = join(SRC, 'cli', 'main.ts');
// Inside node_modules, so that the bundle's imports of packages resolve as src/'s do.
export const CACHE = join(ROOT, 'node_modules', '.cache', 'pigeon');

/** The digest of `src`: every source file's path, size and modification time. */
export function sourceDigest(src = SRC) {
  const hash = createHash('sha256');
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (!entry.name.endsWith('.test.ts')) {
        const { size, mtimeMs } = statSync(path);
        hash.update(`${relative(src, path)}\0${size}\0${mtimeMs}\n`);
      }
    }
  };
  walk(src);
  // How the bundle is made is part of what it is, and so are the packages it carries inside it.
  hash.update(readFileSync(fileURLToPath(import.meta.url)));
  for (const name of INLINED) hash.update(`${name}@${packageVersion(name)}\n`);
  return hash.digest('hex').slice(0, 16);
}

/**
 * Modules find their files next to them (`new URL('./assets/x', import.meta.url)`, workers,
 * createRequire, import.meta.dirname): in a bundle each of Pigeon's own modules keeps the address
 * of its source file.
 */
const sourceAddresses = {
  name: 'source-addresses',
  setup(build) {
    build.onLoad({ filter: /\.(ts|mjs)$/ }, (args) => {
      if (!args.path.startsWith(ROOT) || args.path.includes('/node_modules/')) return undefined;
      const text = readFileSync(args.path, 'utf8')
        .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href))
        .replaceAll('import.meta.dirname', JSON.stringify(dirname(args.path)))
        .replaceAll('import.meta.filename', JSON.stringify(args.path));
      return { contents: text, loader: args.path.endsWith('.ts') ? 'ts' : 'js' };
    });
  },
};

/**
 * Packages bundled into Pigeon's code rather than loaded from node_modules: plain JavaScript that
 * reads no file of its own at run time, and whose many modules each cost a resolution and a read
 * when loaded one by one (Kysely's ESM build alone is some 290 files; it took a process 270 ms of
 * CPU to import, libphonenumber-js 120 ms, prom-client with @opentelemetry/api 95 ms). Everything
 * else stays in node_modules: native drivers, packages that start workers from their own files
 * (pino's transports) or serve files beside them (Fastify's static and Swagger UI plugins).
 */
const INLINED = ['kysely', 'libphonenumber-js', 'commander', 'prom-client', '@opentelemetry/api', 'tdigest', 'bintrees', 'qrcode', 'pngjs', 'dijkstrajs'];

function packageVersion(name) {
  try {
    return JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')).version;
  } catch {
    return 'absent';
  }
}

/** Every bare import is external, node's own and packages alike, except the packages of INLINED. */
const packagesExceptInlined = {
  name: 'packages-except-inlined',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) => {
      const name = args.path.startsWith('@') ? args.path.split('/').slice(0, 2).join('/') : args.path.split('/')[0];
      return INLINED.includes(name) ? undefined : { path: args.path, external: true };
    });
  },
};

/**
 * Bundles `entryPoints` (paths, or names to paths) into `outdir`, which must be inside the
 * project's node_modules for the bundle's imports of packages to resolve as the sources' do.
 * Split in chunks at every dynamic import and shared module, so that a process loads only what
 * it uses: `pigeon account list` never loads Fastify, and `serve` loads it once it starts the API.
 * Output files keep their sources' folders below the project's root, and end in .mjs.
 */
export async function bundle(entryPoints, outdir) {
  const { build } = await import('esbuild');
  await build({
    entryPoints,
    outdir,
    outbase: ROOT,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // No keepNames: it defines the name of every function again each time one is made, closures
    // of a request included (2 % of a verification's create in a profile). Without it only names
    // that collide across modules change (a second `view` becomes `view2`), and no code reads them.
    // The CommonJS packages among INLINED call require() for node's modules, which an ES module has
    // not. (Spelled in two pieces: the test files' bundle carries this file, through sourceAddresses.)
    banner: { js: `import { createRequire as __pigeonRequire } from 'node:module'; const require = __pigeonRequire(${'import.meta'}.url);` },
    sourcemap: 'linked',
    sourcesContent: false,
    logLevel: 'silent',
    plugins: [sourceAddresses, packagesExceptInlined],
  });
}

/**
 * Builds the command line's bundle of the tree whose digest is `digest` into the cache and gives
 * its entry file; false when it cannot (no esbuild, a read-only folder).
 */
export async function buildBundle(digest = sourceDigest()) {
  const entry = bundleEntry(digest);
  const dir = dirname(entry);
  if (existsSync(entry)) return entry;
  const temporary = join(CACHE, `${digest}.${process.pid}.tmp`);
  try {
    await bundle({ main: ENTRY }, temporary);
    try {
      renameSync(temporary, dir);
    } catch (err) {
      // Another process built the same tree first: its copy is the one.
      if (!existsSync(entry)) throw err;
    }
    removeStale(digest);
    return entry;
  } catch {
    return false;
  } finally {
    rmSync(temporary, { recursive: true, force: true });
  }
}

/**
 * Bundles of other trees, once a day old: a server still running an earlier tree loads the chunks
 * it needs at its start, and a day leaves it room for any it loads later.
 */
function removeStale(current) {
  const dayAgo = Date.now() - 86_400_000;
  for (const name of readdirSync(CACHE)) {
    if (name === current) continue;
    const path = join(CACHE, name);
    if (statSync(path).mtimeMs < dayAgo) rmSync(path, { recursive: true, force: true });
  }
}

/** Where the bundle of the tree whose digest is `digest` is kept. */
export function bundleEntry(digest = sourceDigest()) {
  return join(CACHE, digest, 'main.mjs');
}

/** The bundle to run: built if it is missing; null when it cannot be, and tsx should run src/. */
export async function cliBundle() {
  if (process.env.PIGEON_BUNDLE === 'off') return null;
  try {
    return (await buildBundle()) || null;
  } catch {
    return null;
  }
}
