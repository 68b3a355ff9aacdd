/**
 * `pigeon account retention`, `pigeon retention run`, `pigeon privacy erase` and `privacy list`
 * through real child processes (DECISIONS.md §13), on a store holding old and recent messages.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { pigeonCli, ROOT } from '../helpers/processes.ts';
import { processDatabase } from '../helpers/test-store.ts';
import type { Store } from '../../src/store/connect.ts';
import { insertMessages } from '../../src/store/repositories/messages.repository.ts';
import type { MessagesTable } from '../../src/store/database.ts';

const dir = mkdtempSync(join(tmpdir(), 'pigeon-retention-cli-'));
const database = processDatabase('retention_cli', dir);
const env = { ...process.env, DATABASE_URL: database.url, LOG_LEVEL: 'warn' };
const pigeon = (...args: string[]) => pigeonCli(env, ...args);
const DAY = 24 * 3_600_000;

let store: Store;
let accountId: string;
let otherId: string;

function message(id: string, account: string, recipient: string, ageDays: number, status: MessagesTable['status'] = 'delivered'): MessagesTable {
  const at = Date.now() - ageDays * DAY;
  return {
    id,
    account_id: account,
    batch_id: null,
    recipient,
    sender: 'Acme',
    body: `text of ${id}`,
    encoding: 'GSM-7',
    segments: 1,
    status,
    callback_url: null,
    carrier_message_id: null,
    error_code: null,
    error_message: null,
    created_at: at,
    sent_at: at,
    delivered_at: status === 'delivered' ? at : null,
    updated_at: at,
    send_at: null,
    validity_period: null,
    expires_at: null,
  };
}

before(async () => {
  store = await database.open();
  const created = await pigeon('account', 'create', '--name', 'Acme Ltd', '--email', 'ops@acme.test', '--credits', '50');
  assert.equal(created.code, 0, created.stderr);
  accountId = created.json.id;
  otherId = (await pigeon('account', 'create', '--name', 'Other Ltd', '--email', 'ops@other.test')).json.id;
  await insertMessages(store.db, [
    message('msg_old1', accountId, '+447700900001', 100),
    message('msg_old2', accountId, '+447700900002', 90),
    message('msg_oldpending', accountId, '+447700900003', 90, 'sent'),
    message('msg_new1', accountId, '+447700900555', 2),
    message('msg_new2', accountId, '+447700900556', 1),
    message('msg_other', otherId, '+447700900555', 1),
  ]);
});
after(async () => {
  await database.close();
  rmSync(dir, { recursive: true, force: true });
});

const rows = () => store.db.selectFrom('messages').select(['id', 'body', 'recipient']).orderBy('id').execute();

test('account retention shows and shortens the settings, refusing longer than the installation or a bad value', async () => {
  // Independent processes side by side: reading, and three refusals that change nothing.
  const [shown, longer, bad, unknown] = await Promise.all([
    pigeon('account', 'retention', accountId),
    pigeon('account', 'retention', accountId, '--message-days', '401'),
    pigeon('account', 'retention', accountId, '--body-days', 'soon'),
    pigeon('account', 'retention', 'acc_nope', '--body-days', '1'),
  ]);
  assert.equal(shown.code, 0, shown.stderr);
  assert.deepEqual(shown.json.retention, { body_days: 30, message_days: 400, mask_numbers_days: null });
  assert.deepEqual(shown.json.overridden, { body_days: false, message_days: false, mask_numbers_days: false });
  assert.equal(longer.code, 1);
  assert.match(longer.stderr, /--message-days 401 is longer than the installation's RETENTION_MESSAGE_DAYS \(400 days\)/);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--body-days must be a whole number of days/);
  assert.equal(unknown.code, 1);

  const set = await pigeon('account', 'retention', accountId, '--body-days', '0', '--message-days', '60');
  assert.equal(set.code, 0, set.stderr);
  assert.deepEqual(set.json.retention, { body_days: 0, message_days: 60, mask_numbers_days: null });
  assert.deepEqual(set.json.overridden, { body_days: true, message_days: true, mask_numbers_days: false });
  // Human output says which settings follow the installation.
  const { stdout } = await promisify(execFile)('./bin/pigeon', ['account', 'retention', accountId], { cwd: ROOT, env });
  assert.match(stdout, /message text: removed at the next purge\nmessages: 60 days\nnumbers masked after: never \(installation default\)/);
});

test('retention run removes what is due and prints it; a message on its way stays whole', async () => {
  const run = await pigeon('retention', 'run');
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.json.messages_deleted, 2);
  assert.equal(run.json.bodies_removed, 2);
  assert.ok(run.json.batches >= 2);
  assert.deepEqual(
    (await rows()).map((r) => [r.id, r.body]),
    [
      ['msg_new1', ''],
      ['msg_new2', ''],
      ['msg_oldpending', 'text of msg_oldpending'],
      ['msg_other', 'text of msg_other'],
    ],
  );
  const totals = await store.db.selectFrom('daily_totals').selectAll().where('account_id', '=', accountId).execute();
  assert.equal(totals.reduce((a, t) => a + Number(t.messages), 0), 2);
  assert.ok(totals.every((t) => t.country === '44' && t.status === 'delivered'));
  const [again, human] = await Promise.all([pigeon('retention', 'run'), promisify(execFile)('./bin/pigeon', ['retention', 'run'], { cwd: ROOT, env })]);
  assert.equal(again.json.messages_deleted + again.json.bodies_removed, 0, 'nothing twice');
  assert.match(human.stdout, /^Messages deleted: 0 \(counted into the daily totals first\)\nMessage texts removed: 0\n/);
});

test('privacy erase for one account, then for the whole installation, recorded in privacy list', async () => {
  const one = await pigeon('privacy', 'erase', '+447700900555', '--account', accountId);
  assert.equal(one.code, 0, one.stderr);
  assert.equal(one.json.status, 'done');
  assert.equal(one.json.phone, '+44770090XXXX');
  assert.equal(one.json.counts.messages, 1);
  assert.equal((await rows()).find((r) => r.id === 'msg_other')?.recipient, '+447700900555', 'another account is not touched');
  const [all, refused] = await Promise.all([pigeon('privacy', 'erase', '+447700900555'), pigeon('privacy', 'erase', 'nonsense')]);
  assert.equal(all.code, 0, all.stderr);
  assert.equal(refused.code, 1);
  assert.equal(all.json.account_id, null);
  assert.equal(all.json.counts.messages, 1);
  assert.deepEqual(
    (await rows()).filter((r) => r.id === 'msg_other').map((r) => [r.body, r.recipient]),
    [['', '+44770090XXXX']],
  );
  const list = await pigeon('privacy', 'list');
  assert.equal(list.code, 0, list.stderr);
  assert.deepEqual(
    list.json.data.map((e: { account_id: string | null; requested_by: string; phone: string; status: string }) => [e.account_id, e.requested_by, e.phone, e.status]),
    [
      [null, 'operator', '+44770090XXXX', 'done'],
      [accountId, 'operator', '+44770090XXXX', 'done'],
    ],
  );
  const stored = await store.db.selectFrom('erasures').select('phone').execute();
  assert.ok(stored.every((e) => e.phone === '+44770090XXXX'), 'a done erasure keeps the number masked only');
});
