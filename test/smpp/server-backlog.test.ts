/**
 * The dispatch backlog's bounds answered over SMPP (DECISIONS.md §10): a submit that would take the
 * account past its share of the backlog is 0x58 (throttled, temporary), one that would take the
 * installation's backlog past its limit 0x14 (queue full, temporary); nothing is charged for them.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { encodeGsm7 } from '../../src/carriers/smpp/gsm7.ts';
import { bound, call, closed, serverFixture, type ServerFixture } from './server-fixture.ts';

let f: ServerFixture;
before(async () => {
  // A backlog of 4 messages, 2 of them per account; nothing is dispatched (the workers are not run).
  f = await serverFixture({ DISPATCH_BACKLOG_LIMIT: '4', DISPATCH_BACKLOG_ACCOUNT_SHARE: '50' });
});
after(async () => {
  await f.close();
});

test('over the account\'s share: 0x58; the installation\'s backlog full: 0x14', async () => {
  const users = [await f.user(), await f.user(), await f.user()];
  const sessions = await Promise.all(users.map((u) => bound(f.port, u)));
  const submit = async (i: number) =>
    (await call(sessions[i]!, 'submit_sm', { source_addr_ton: 5, source_addr: 'Acme', dest_addr_ton: 1, destination_addr: '447700900001', short_message: encodeGsm7(`m${i}`) })).command_status;
  assert.deepEqual([await submit(0), await submit(0)], [0, 0]);
  assert.equal(await submit(0), 0x58, 'the first account is at its share');
  assert.deepEqual([await submit(1), await submit(1)], [0, 0]);
  assert.equal(await submit(2), 0x14, 'four wait: the installation is full');
  for (const s of sessions) s.close();
  await Promise.all(sessions.map(closed));
});
