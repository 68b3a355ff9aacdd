/**
 * `pigeon verify blocks [--account ID]` and `pigeon verify unblock ACCOUNT_ID RANGE` through real
 * child processes (DECISIONS.md §14), on a store holding ranges blocked by the fraud guard.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pigeonCli } from '../helpers/processes.ts';
import { processDatabase, serviceContext } from '../helpers/test-store.ts';
import { createCustomer } from '../helpers/customers.ts';
import type { Store } from '../../src/store/connect.ts';
import { upsertBlock } from '../../src/store/repositories/verify.repository.ts';
import { listAuditEvents } from '../../src/store/repositories/audit-events.repository.ts';

const dir = mkdtempSync(join(tmpdir(), 'pigeon-verify-cli-'));
const database = processDatabase('verify_cli', dir);
const env = { ...process.env, DATABASE_URL: database.url, LOG_LEVEL: 'warn' };
const pigeon = (...args: string[]) => pigeonCli(env, ...args);
const HOUR = 3_600_000;

let store: Store;
let acme: string;
let other: string;

before(async () => {
  store = await database.open();
  const ctx = serviceContext(store);
  acme = (await createCustomer(ctx, { name: 'Acme', email: 'ops@acme.test', credits: 0 })).accountId;
  other = (await createCustomer(ctx, { name: 'Other', email: 'ops@other.test', credits: 0, sender: null })).accountId;
  const now = Date.now();
  const block = (account_id: string, range_prefix: string, blocked_until: number) =>
    upsertBlock(store.db, { account_id, range_prefix, level: 0, blocked_at: now - HOUR, blocked_until, sent: 12, approved: 1 });
  await block(acme, '+447700900', now + 11 * HOUR);
  await block(other, '+447700901', now + 11 * HOUR);
  await block(acme, '+447700902', now - 1); // ended: not listed
});
after(async () => {
  await database.close();
  rmSync(dir, { recursive: true, force: true });
});

test('blocks lists the ranges blocked now, of every account or of one', async () => {
  const all = await pigeon('verify', 'blocks');
  assert.equal(all.code, 0, all.stderr);
  assert.deepEqual(all.json.data.map((b: { account_id: string; range: string }) => `${b.account_id} ${b.range}`).sort(), [`${acme} +447700900`, `${other} +447700901`].sort());
  const one = await pigeon('verify', 'blocks', '--account', acme);
  assert.deepEqual(one.json.data.map((b: { range: string; sent: number; approved: number }) => [b.range, b.sent, b.approved]), [['+447700900', 12, 1]]);
});

test('unblock ends the block at once, recorded as the command line; a range not blocked is not_found', async () => {
  const done = await pigeon('verify', 'unblock', acme, '+447700900');
  assert.equal(done.code, 0, done.stderr);
  assert.deepEqual(done.json, { account_id: acme, range: '+447700900', unblocked: true });
  const again = await pigeon('verify', 'unblock', acme, '+447700900');
  assert.equal(again.code, 1);
  assert.match(again.stderr + again.stdout, /not_found/);
  const audit = await listAuditEvents(store.db, { accountId: acme, action: 'verify.range_unblocked' }, 10, 0);
  assert.equal(audit.length, 1);
  assert.equal(audit[0]!.actor_type, 'cli');
  assert.equal(audit[0]!.target_id, '+447700900');
  // The other account's block is untouched.
  const left = await pigeon('verify', 'blocks');
  assert.deepEqual(left.json.data.map((b: { range: string }) => b.range), ['+447700901']);
});
