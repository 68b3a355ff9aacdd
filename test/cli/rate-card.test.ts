/** `pigeon rate-card list|show|import` and `pigeon account set-rate-card` through real child processes (DECISIONS.md §11). */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, pigeonCli, ROOT, startPigeon, type PigeonProcess } from '../helpers/processes.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { processDatabase } from '../helpers/test-store.ts';

const dir = mkdtempSync(join(tmpdir(), 'pigeon-rate-card-'));
const database = processDatabase('rate_card_cli', dir);
const env = { ...process.env, DATABASE_URL: database.url, LOG_LEVEL: 'warn' };

const pigeon = (...args: string[]) => pigeonCli(env, ...args);
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

let server: PigeonProcess;
let port: number;
before(async () => {
  await database.open();
  port = await freePort();
  server = await startPigeon(['serve', '--no-workers'], { DATABASE_URL: database.url, PORT: String(port) });
});
after(async () => {
  await server?.stop();
  await database.close();
  rmSync(dir, { recursive: true, force: true });
});

test('import: a dry run shows the difference and changes nothing; merge, replace, a bad line named, show --csv', async () => {
  const first = file('first.csv', 'prefix,credits_per_segment\n+44,3\n+447,5\n+1,blocked\n');
  const [dry, made] = await Promise.all([pigeon('rate-card', 'import', 'silver', first, '--dry-run'), pigeon('rate-card', 'import', 'gold', first)]);
  assert.equal(dry.code, 0, dry.stderr);
  assert.deepEqual(dry.json, {
    added: [
      { prefix: '+1', credits_per_segment: 'blocked' },
      { prefix: '+44', credits_per_segment: 3 },
      { prefix: '+447', credits_per_segment: 5 },
    ],
    raised: [],
    lowered: [],
    removed: [],
    unchanged: 0,
  });
  assert.equal(made.code, 0, made.stderr);

  const second = file('second.csv', 'prefix,credits_per_segment\n+44,4\n+447,2\n+1,blocked\n+33,1\n');
  // A bad line anywhere changes nothing, and is named by its line in the file (header = 1): in
  // whichever order the two run, the replace below finds the merge's card.
  const bad = file('bad.csv', 'prefix,credits_per_segment\n+44,9\n\n+49,two\n');
  const [merged, refused] = await Promise.all([pigeon('rate-card', 'import', 'gold', second), pigeon('rate-card', 'import', 'gold', bad, '--replace')]);
  assert.deepEqual(merged.json, {
    added: [{ prefix: '+33', credits_per_segment: 1 }],
    raised: [{ prefix: '+44', credits_per_segment: 4, previous: 3 }],
    lowered: [{ prefix: '+447', credits_per_segment: 2, previous: 5 }],
    removed: [],
    unchanged: 1,
  });

  assert.equal(refused.code, 1);
  const error = JSON.parse(refused.stderr);
  assert.equal(error.code, 'invalid_rate_card');
  assert.match(error.message, /^Line 4: /);

  const replaced = await pigeon('rate-card', 'import', 'gold', file('third.csv', 'prefix,credits_per_segment\n+44,4\n+49,6\n'), '--replace');
  assert.deepEqual(replaced.json, {
    added: [{ prefix: '+49', credits_per_segment: 6 }],
    raised: [],
    lowered: [],
    removed: [
      { prefix: '+1', credits_per_segment: null, previous: 'blocked' },
      { prefix: '+33', credits_per_segment: null, previous: 1 },
      { prefix: '+447', credits_per_segment: null, previous: 2 },
    ],
    unchanged: 1,
  });
  // A dated change: not in effect now, in effect from its time; the CSV export reads back.
  const [shown, dated] = await Promise.all([
    pigeon('rate-card', 'show', 'gold'),
    pigeon('rate-card', 'import', 'gold', file('dated.csv', 'prefix,credits_per_segment\n+49,8\n'), '--effective-from', '2099-01-01T00:00:00Z'),
  ]);
  assert.deepEqual(Object.keys(shown.json), ['card', 'entries']);
  assert.deepEqual(shown.json.entries.map((e: { prefix: string; credits_per_segment: number }) => [e.prefix, e.credits_per_segment]), [['+44', 4], ['+49', 6]]);
  assert.match(shown.json.entries[0].effective_from, /^\d{4}-\d\d-\d\dT/);

  assert.deepEqual(dated.json.raised, [{ prefix: '+49', credits_per_segment: 8, previous: 6 }]);
  const csv = async (...args: string[]) => (await promisify(execFile)('./bin/pigeon', ['rate-card', 'show', 'gold', '--csv', ...args], { cwd: ROOT, env })).stdout;
  const [now, then] = await Promise.all([csv(), csv('--at', '2099-01-02T00:00:00Z')]);
  assert.equal(now, 'prefix,credits_per_segment\n+44,4\n+49,6\n');
  assert.equal(then, 'prefix,credits_per_segment\n+44,4\n+49,8\n');
});

test('list and set-rate-card; a running server in another process prices by the change within 2 s', async () => {
  const account = await pigeon('account', 'create', '--name', 'Acme Ltd', '--email', 'ops@acme.test');
  const key = (await pigeon('key', 'create', account.json.id, '--label', 'live')).json.key as string;
  const pricing = async () => (await (await fetch(`http://127.0.0.1:${port}/v1/pricing?to=%2B447700900123`, { headers: { authorization: `Bearer ${key}` } })).json()).data;
  assert.equal((await pricing()).credits_per_segment, 1, 'the default card');
  const set = await pigeon('account', 'set-rate-card', account.json.id, 'gold');
  let changedAt = performance.now();
  await waitFor(async () => (await pricing())?.credits_per_segment === 4, { timeout: 2000, interval: 50, message: 'the server to see the account\'s card' });
  assert.ok(performance.now() - changedAt < 2000);
  await pigeon('rate-card', 'import', 'gold', file('cheaper.csv', 'prefix,credits_per_segment\n+44,2\n'));
  changedAt = performance.now();
  await waitFor(async () => (await pricing())?.credits_per_segment === 2, { timeout: 2000, interval: 50, message: 'the server to see the new price' });

  const [unknown, list] = await Promise.all([pigeon('account', 'set-rate-card', account.json.id, 'nope'), pigeon('rate-card', 'list')]);
  assert.deepEqual(set.json, { id: account.json.id, rate_card: 'gold' });
  assert.equal(JSON.parse(unknown.stderr).code, 'not_found');
  // Stored rows: gold's two in effect and its dated change; the dry run made no card `silver`.
  assert.deepEqual(list.json.data.map((c: { name: string; entries: number; accounts: number }) => [c.name, c.entries, c.accounts]), [['default', 1, 0], ['gold', 3, 1]]);
});
