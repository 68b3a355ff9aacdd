#!/usr/bin/env node
// Runs every *.test.ts under src/ and test/ with node's test runner, bundled by esbuild as
// bin/pigeon runs src/ (bin/bundle.mjs), or through tsx with TEST_BUNDLE=off. Node 20's runner
// does not expand globs itself, so the files are listed here.
//
// Usage: node scripts/run-tests.mjs [--pg] [--suite=node-versions] [--concurrency=N] [dir-or-file ...]
//   --pg             the same tests against PostgreSQL: TEST_DATABASE_URL, by default the local
//                    `test` database. The store suites then run on PostgreSQL only: their SQLite
//                    half is the plain run's (TEST_DIALECTS=sqlite,postgres runs both); and the
//                    whole suite leaves out the files that never read TEST_DATABASE_URL.
//   --suite=node-versions   only the tests that can behave differently on another Node: what
//                    .ci/run runs on Node 22 and 24 (docs/testing.md says why these).
//   --concurrency=N  test files run N at a time (TEST_CONCURRENCY; default 2). Every file builds
//                    its own stores, ports and folders, so files never share state.
//
// At the end it prints the slowest files (each file's wall time, its process's start included) for
// whoever wants to make the suite faster; it judges nothing.
import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { tmpdir } from 'node:os';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { SourceMap } from 'node:module';
import { createInterface } from 'node:readline';

// Default test roots; `npm test` runs these.
const DEFAULT_ROOTS = ['src', 'test/api', 'test/cli', 'test/smpp', 'packages/client/test', 'test/crash', 'test/faults', 'test/security', 'test/docs', 'test/store', 'test/multiprocess'];

// What can change with the Node version: native code (the SQLite drivers and their choice, the
// read, checkpoint and backup threads, how a full or failing disk surfaces through the driver),
// worker threads (XLSX), scrypt hashing, TLS (each Node brings its own OpenSSL), V8 flags and
// heap limits, process crashes and restarts, and the client package (fetch, streams, its build).
// Everything else is plain JavaScript over Fastify's inject and runs on Node 20 and PostgreSQL.
const NODE_VERSION_ROOTS = [
  // src/: the unit tests of what touches the driver, threads, streams, crypto (OpenSSL), time zones
  // (ICU's data) or the network stack; the pure functions (segmentation, numbers, templates, roles,
  // parsers) are plain JavaScript and run on Node 20 only.
  'src/store',
  'src/services',
  'src/util/slots.test.ts',
  'src/util/cork.test.ts',
  'src/http/request-logger.test.ts',
  'src/webhooks/address-guard.test.ts',
  'src/workers/worker-loop.test.ts',
  'src/domain/local-time.test.ts',
  'src/domain/time-zones.test.ts',
  'src/domain/quiet-hours.test.ts',
  'src/domain/scheduling.test.ts',
  'src/domain/smpp-time.test.ts',
  'src/domain/backup-schedule.test.ts',
  'src/domain/audit.test.ts',
  'src/domain/verify.test.ts',
  'src/domain/tracked-links.test.ts',
  'src/domain/webhook-signature.test.ts',
  'src/domain/twilio-signature.test.ts',
  'test/store',
  'test/crash',
  'test/multiprocess',
  'packages/client/test',
  'test/cli/bin.test.ts',
  'test/cli/backup.test.ts',
  'test/cli/startup-errors.test.ts',
  'test/faults/sqlite-disk-full.test.ts',
  'test/faults/sqlite-read-only.test.ts',
  'test/smpp/server-tls.test.ts',
  'test/api/dashboard-auth.test.ts',
  'test/security/memory.test.ts',
];

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

const env = { ...process.env };
// Test files run in parallel and many start `pigeon serve`: none may take the SMPP listener's
// fixed default port; a test of the listener names a free port of its own.
env.SMPP_SERVER_PORT ??= '0';
let pg = false;
let roots = [];
let concurrency = Number(process.env.TEST_CONCURRENCY ?? 2);
for (const arg of process.argv.slice(2)) {
  if (arg === '--pg') pg = true;
  else if (arg === '--suite=node-versions') roots.push(...NODE_VERSION_ROOTS);
  else if (arg.startsWith('--concurrency=')) concurrency = Number(arg.slice('--concurrency='.length));
  else if (arg.startsWith('--')) {
    console.error(`unknown option ${arg}`);
    process.exit(2);
  } else roots.push(arg);
}
if (!Number.isInteger(concurrency) || concurrency < 1) {
  console.error('--concurrency takes a whole number of files, 1 or more');
  process.exit(2);
}
if (pg) {
  env.TEST_DATABASE_URL ||= 'postgres://postgres@127.0.0.1:5432/test';
  env.TEST_DIALECTS ||= 'postgres';
}
// test/multiprocess: the scheduled release runs on both databases; the scale-out test skips
// itself without PostgreSQL. test/faults: a throwaway PostgreSQL cluster, Redis and tmpfs of
// their own (root and the PostgreSQL server binaries; each test skips itself without them).
const everything = roots.length === 0;
if (everything) roots = DEFAULT_ROOTS;
let files = [...new Set(roots.filter((r) => existsSync(r)).flatMap((r) => find(r, [])))].sort();
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
// The whole suite on PostgreSQL leaves out the files that cannot reach it: those whose imports,
// followed through every helper, never read TEST_DATABASE_URL. They would only repeat, on SQLite,
// what `npm test` ran (the docs' walk-throughs, start-up errors, pure functions). Named files run
// as named.
if (pg && everything) {
  const storeBlind = await filesNotReading('TEST_DATABASE_URL', files);
  files = files.filter((f) => !storeBlind.has(f));
  console.log(`${storeBlind.size} test files never read TEST_DATABASE_URL and ran in npm test: left out here\n`);
}

/** The system catalogs that making and dropping schemas writes to. */
const CHURNED_CATALOGS = ['pg_class', 'pg_attribute', 'pg_attrdef', 'pg_depend', 'pg_type', 'pg_index', 'pg_constraint', 'pg_trigger', 'pg_proc', 'pg_namespace', 'pg_init_privs', 'pg_description'];

const { bundle, buildBundle, CACHE } = await import('../bin/bundle.mjs');
// Built once here rather than by the first few files' `pigeon` processes at the same moment.
await buildBundle();
// The test files run bundled, as bin/pigeon runs src/: through tsx each file's process spent
// 1-1.7 s of CPU loading its modules before its first test. TEST_BUNDLE=off runs them through tsx.
let bundled = null;
if (process.env.TEST_BUNDLE !== 'off') {
  bundled = mkdtempSync(`${CACHE}-tests-`);
  await bundle(files, bundled);
}
const runnable = bundled ? files.map((f) => join(bundled, f.replace(/\.ts$/, '.mjs'))) : files;
const sourceOf = (file) => (bundled && file?.startsWith(bundled) ? relative(bundled, file).replace(/\.mjs$/, '.ts') : file);

// Migrated test stores are copies of templates made once a run (test/helpers/store-template.ts),
// in a folder that goes with the run, so that no template outlives the migrations it was made by.
const templates = mkdtempSync(join(tmpdir(), 'pigeon-store-templates-'));
env.TEST_STORE_TEMPLATES = templates;
// The run's PostgreSQL schemas are named t_<TEST_RUN_ID>_…: any that a killed file left are dropped at the end.
env.TEST_RUN_ID = randomBytes(4).toString('hex');
const timesDir = mkdtempSync(join(tmpdir(), 'pigeon-test-times-'));
const timesFile = join(timesDir, 'times.jsonl');
const reporter = new URL('./test-times-reporter.mjs', import.meta.url).pathname;
// Without --enable-source-maps: Node 20 parses a module's whole source map as it loads it, which
// cost each test file's process about 0.4 s of CPU (a quarter of its start) for maps that only a
// failure reads. The places a failure names are put back into sources' terms here instead, in the
// output as it passes through (`at …/test/api/send.test.mjs:120:7` becomes `test/api/send.test.ts:88:5`).
const child = spawn(
  process.execPath,
  [
    ...(bundled ? [] : ['--import', 'tsx']),
    '--test',
    `--test-concurrency=${concurrency}`,
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    `--test-reporter=${reporter}`,
    `--test-reporter-destination=${timesFile}`,
    ...runnable,
  ],
  { stdio: ['inherit', 'pipe', 'pipe'], env },
);
const sourceMaps = new Map();
const relay = (from, to) =>
  new Promise((resolve) => {
    const lines = createInterface({ input: from, crlfDelay: Infinity });
    lines.on('line', (line) => to.write(`${bundled ? inSourceTerms(line) : line}\n`));
    lines.on('close', resolve);
  });
const [status] = await Promise.all([new Promise((resolve) => child.on('close', (code) => resolve(code))), relay(child.stdout, process.stdout), relay(child.stderr, process.stderr)]);
const records = existsSync(timesFile)
  ? readFileSync(timesFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const record = JSON.parse(line);
        return { ...record, file: sourceOf(record.file) };
      })
  : [];
rmSync(timesDir, { recursive: true, force: true });
rmSync(templates, { recursive: true, force: true });
if (env.TEST_DATABASE_URL?.startsWith('postgres')) {
  await dropSchemasOfRun(env.TEST_DATABASE_URL, env.TEST_RUN_ID);
  await vacuumCatalogs(env.TEST_DATABASE_URL);
}
if (bundled) rmSync(bundled, { recursive: true, force: true });
printSlowest(records, 20);
// CI_TEST_LOG: .ci/run collects every run's files and results there, for its closing summary.
if (process.env.CI_TEST_LOG) {
  const stage = process.env.CI_TEST_STAGE ?? '';
  appendFileSync(process.env.CI_TEST_LOG, records.map((r) => `${JSON.stringify({ stage, ...r, file: r.file && relative(process.cwd(), r.file) })}\n`).join(''));
}
process.exit(status ?? 1);

/** The files among `files` whose import graph (node_modules aside) holds no module that mentions `word`. */
async function filesNotReading(word, files) {
  const { build } = await import('esbuild');
  const { metafile } = await build({ entryPoints: files, bundle: true, write: false, metafile: true, outdir: join(tmpdir(), 'pigeon-test-graph'), platform: 'node', format: 'esm', packages: 'external', logLevel: 'silent' });
  const mentions = new Map();
  const reads = (input) => {
    if (!mentions.has(input)) mentions.set(input, readFileSync(input, 'utf8').includes(word));
    return mentions.get(input);
  };
  const blind = new Set();
  for (const output of Object.values(metafile.outputs)) {
    if (output.entryPoint && !Object.keys(output.inputs).some(reads)) blind.add(output.entryPoint);
  }
  return blind;
}

function printSlowest(records, count) {
  const slowest = records.filter((r) => r.file).sort((a, b) => b.ms - a.ms).slice(0, count);
  if (slowest.length === 0) return;
  console.log(`\nslowest ${slowest.length} test files (seconds, wall time of each):`);
  for (const { file, ms } of slowest) console.log(`${(ms / 1000).toFixed(1).padStart(8)}  ${relative(process.cwd(), file)}`);
}

/** `line` with every place in the bundled files (`path.mjs:LINE:COLUMN`) given as the source's. */
function inSourceTerms(line) {
  // The reporter names a test's file relative to the working folder; stacks give it whole.
  const near = relative(process.cwd(), bundled);
  if (!line.includes(near)) return line;
  const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const place = new RegExp(`(?:(?:file://)?${escape(bundled)}|${escape(near)})/([^\\s:()]+\\.mjs):(\\d+):(\\d+)`, 'g');
  return line.replace(place, (whole, file, row, column) => {
    const entry = sourceMapOf(join(bundled, file))?.findEntry(Number(row) - 1, Number(column) - 1);
    if (!entry?.originalSource) return whole;
    const source = entry.originalSource.startsWith('file:') ? new URL(entry.originalSource).pathname : join(dirname(join(bundled, file)), entry.originalSource);
    return `${relative(process.cwd(), source)}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
  });
}

function sourceMapOf(file) {
  if (!sourceMaps.has(file)) {
    let map = null;
    try {
      map = new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8')));
    } catch {
      // no map: the place stays as it is
    }
    sourceMaps.set(file, map);
  }
  return sourceMaps.get(file);
}

/** Drops the schemas of this run that a test file's process left (killed, or ended before its own drop). */
async function dropSchemasOfRun(url, runId) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    const { rows } = await client.query(`select nspname from pg_namespace where nspname like $1`, [`t\\_${runId}\\_%`]);
    if (rows.length === 0) return;
    await client.query('select pg_advisory_lock($1)', [7_050_726_717]); // MIGRATION_LOCK_KEY of src/store/migrate.ts
    await client.query(`drop schema if exists ${rows.map((r) => r.nspname).join(', ')} cascade`);
    console.log(`dropped ${rows.length} schemas left by this run's test files`);
  } catch (error) {
    console.error(`could not drop the schemas this run left: ${error.message}`);
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * A run makes and drops a few hundred schemas, each some 200 rows of the system catalogs. Where
 * autovacuum is off (as on the CI machine's PostgreSQL) those dead rows stay, and every later
 * listing of the catalogs reads them: after a day of runs pg_attribute held 2.4 million dead rows
 * (504 MB), and a count of pg_class took 170 ms. A plain VACUUM at the end of each run lets the
 * next one reuse the space. (.ci/run also shrinks them with VACUUM FULL before it starts.)
 */
async function vacuumCatalogs(url) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    await client.query(`vacuum ${CHURNED_CATALOGS.map((t) => `pg_catalog.${t}`).join(', ')}`);
  } catch (error) {
    console.error(`could not vacuum the system catalogs: ${error.message}`);
  } finally {
    await client.end().catch(() => {});
  }
}
