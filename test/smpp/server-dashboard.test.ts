/** Settings → SMPP in the owner's dashboard: the account's SMPP users, their live binds, where to bind. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DashboardClient } from '../helpers/dashboard-client.ts';
import { createSmppUser } from '../../src/services/smpp-access/smpp-users.ts';
import { createOperator } from '../../src/services/auth/operators.ts';
import { bound, closed, serverFixture, waitFor, type ServerFixture } from './server-fixture.ts';

let f: ServerFixture;
let client: DashboardClient;
let accountId: string;
before(async () => {
  f = await serverFixture();
  client = new DashboardClient(f.h.app);
  const form = await client.get('/dashboard/signup');
  await client.post('/dashboard/signup', { name: 'Binder Ltd', email: 'binder@example.com', password: 'correct horse battery' }, form.body);
  accountId = (await f.h.ctx.store.db.selectFrom('owners').selectAll().executeTakeFirstOrThrow()).account_id;
});
after(async () => {
  await f.close();
});

test('Settings → SMPP lists the account\'s SMPP users with their live binds, never a password, and not other accounts\' users', async () => {
  const empty = await client.get('/dashboard/settings/smpp');
  assert.equal(empty.statusCode, 200);
  assert.match(empty.body, /no SMPP users yet/);
  assert.match(empty.body, /aria-current="page">SMPP</);

  const mine = await createSmppUser(f.h.ctx, accountId, { systemId: 'binder1', tps: 25, allow: ['127.0.0.0/8'] });
  await f.user({ systemId: 'someone_else' });
  const session = await bound(f.port, mine, 'bind_transceiver');
  const page = await waitFor(async () => {
    const res = await client.get('/dashboard/settings/smpp');
    return res.body.includes('<td data-label="Type">transceiver</td>') ? res : null;
  });
  assert.match(page.body, /<code>binder1<\/code>/);
  assert.match(page.body, /25 submits per second, at most 4 binds, from <code>127\.0\.0\.0\/8<\/code>/);
  assert.match(page.body, /<code>127\.0\.0\.1<\/code>/);
  assert.ok(!page.body.includes(mine.password), 'no password on the page');
  assert.ok(!page.body.includes('someone_else'), 'another account\'s user is not shown');

  session.close();
  await closed(session);
  await waitFor(async () => (await client.get('/dashboard/settings/smpp')).body.includes('Not bound now.'));
});

test('the operator console lists the live binds and SMPP users of every account', async () => {
  const a = await f.user({ systemId: 'ops_view_a' });
  const b = await f.user({ systemId: 'ops_view_b' });
  const sessions = [await bound(f.port, a, 'bind_receiver'), await bound(f.port, b, 'bind_transmitter')];
  await createOperator(f.h.ctx, 'ops@example.com', 'operator password');
  const operator = new DashboardClient(f.h.app);
  const form = await operator.get('/operator/login');
  assert.equal((await operator.post('/operator/login', { email: 'ops@example.com', password: 'operator password' }, form.body)).statusCode, 303);
  const page = await operator.get('/operator/smpp');
  assert.equal(page.statusCode, 200);
  assert.match(page.body, /<code>ops_view_a<\/code><\/td><td data-label="Type">receiver<\/td>/);
  assert.match(page.body, /<code>ops_view_b<\/code><\/td><td data-label="Type">transmitter<\/td>/);
  assert.match(page.body, /aria-current="page"[^>]*>SMPP binds</);
  assert.equal((await client.get('/operator/smpp')).statusCode, 303, 'an owner is sent to the operator login');
  for (const s of sessions) s.close();
  await Promise.all(sessions.map(closed));
});
