/** Settings → SMPP in the owner's dashboard: the account's SMPP users, their live binds, where to bind. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DashboardClient, signedInOperator } from '../helpers/dashboard-client.ts';
import { createSmppUser } from '../../src/services/smpp-access/smpp-users.ts';
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

test('Settings → SMPP creates, rotates and deletes the account\'s users: a password shown once that binds, a reload that posts nothing twice, binds ended by a rotation or a deletion, no reach into another account', async () => {
  const nonceOf = (body: string) => /name="nonce" value="([^"]+)"/.exec(body)![1]!;
  const passwordOf = (body: string) => /<code class="secret" id="smpp-password">([^<]+)<\/code>/.exec(body)?.[1];
  await f.h.ctx.store.db.updateTable('owners').set({ email_verified_at: null }).where('account_id', '=', accountId).execute();
  let page = await client.get('/dashboard/settings/smpp');
  const unverified = await client.post('/dashboard/settings/smpp', { system_id: 'selfmade', nonce: nonceOf(page.body) }, page.body);
  assert.equal(unverified.statusCode, 403, 'an owner whose e-mail is not verified creates nothing');
  assert.equal(passwordOf(unverified.body), undefined);
  await f.h.ctx.store.db.updateTable('owners').set({ email_verified_at: f.h.clock.now() }).where('account_id', '=', accountId).execute();

  page = await client.get('/dashboard/settings/smpp');
  const form = { system_id: 'selfmade', tps: '30', max_binds: '2', allow: '127.0.0.0/8, 127.0.0.1', nonce: nonceOf(page.body) };
  const created = await client.post('/dashboard/settings/smpp', form, page.body);
  assert.equal(created.statusCode, 200);
  assert.equal(created.headers['cache-control'], 'no-store');
  const password = passwordOf(created.body)!;
  assert.match(password, /^[A-Za-z0-9]{8}$/);
  assert.match(created.body, /30 submits per second, at most 2 binds, from <code>127\.0\.0\.0\/8<\/code> <code>127\.0\.0\.1<\/code>/);
  const again = await client.post('/dashboard/settings/smpp', form, page.body);
  assert.equal(again.statusCode, 409, 'the same form posted again (a reload) creates nothing');
  assert.equal(passwordOf(again.body), undefined);
  assert.match(again.body, /This form was already sent/, 'refused for its used nonce, not for the taken system_id');
  const afterAgain = await client.get('/dashboard/settings/smpp');
  const differentName = await client.post('/dashboard/settings/smpp', { ...form, system_id: 'selfmade2' }, page.body);
  assert.equal(differentName.statusCode, 409, 'an older form (its nonce used) creates nothing, whatever its system_id');
  assert.match(differentName.body, /This form was already sent/);
  assert.doesNotMatch(afterAgain.body, /selfmade2/);
  const bad = await client.get('/dashboard/settings/smpp');
  const refused = await client.post('/dashboard/settings/smpp', { system_id: 'no spaces', nonce: nonceOf(bad.body) }, bad.body);
  assert.equal(refused.statusCode, 400);
  assert.match(refused.body, /A system_id is 1 to 15/);

  const session = await bound(f.port, { system_id: 'selfmade', password });
  page = await client.get('/dashboard/settings/smpp');
  const rotated = await client.post('/dashboard/settings/smpp/selfmade/rotate', { nonce: nonceOf(page.body) }, page.body);
  assert.equal(rotated.statusCode, 200);
  const fresh = passwordOf(rotated.body)!;
  assert.notEqual(fresh, password);
  const reloaded = await client.post('/dashboard/settings/smpp/selfmade/rotate', { nonce: nonceOf(page.body) }, page.body);
  assert.equal(reloaded.statusCode, 409, 'a reloaded rotation changes the password no more');
  assert.equal(passwordOf(reloaded.body), undefined);
  await closed(session);
  await assert.rejects(bound(f.port, { system_id: 'selfmade', password }), /0xe/);
  const second = await bound(f.port, { system_id: 'selfmade', password: fresh });

  const others = await f.user({ systemId: 'not_theirs' });
  page = await client.get('/dashboard/settings/smpp');
  assert.equal((await client.post('/dashboard/settings/smpp/not_theirs/rotate', { nonce: nonceOf(page.body) }, page.body)).statusCode, 404);
  assert.equal((await client.post('/dashboard/settings/smpp/not_theirs/delete', {}, page.body)).statusCode, 404);
  const theirs = await bound(f.port, others);
  theirs.close();
  await closed(theirs);

  const deleted = await client.post('/dashboard/settings/smpp/selfmade/delete', {}, page.body);
  assert.equal(deleted.statusCode, 303);
  await closed(second);
  assert.doesNotMatch((await client.get('/dashboard/settings/smpp')).body, /selfmade/);
});

test('the operator console lists the live binds and SMPP users of every account', async () => {
  const a = await f.user({ systemId: 'ops_view_a' });
  const b = await f.user({ systemId: 'ops_view_b' });
  const sessions = [await bound(f.port, a, 'bind_receiver'), await bound(f.port, b, 'bind_transmitter')];
  const operator = await signedInOperator(f.h.app, f.h.ctx);
  const page = await operator.get('/operator/smpp');
  assert.equal(page.statusCode, 200);
  assert.match(page.body, /<code>ops_view_a<\/code><\/td><td data-label="Type">receiver<\/td>/);
  assert.match(page.body, /<code>ops_view_b<\/code><\/td><td data-label="Type">transmitter<\/td>/);
  assert.match(page.body, /aria-current="page"[^>]*>SMPP binds</);
  assert.equal((await client.get('/operator/smpp')).statusCode, 303, 'an owner is sent to the operator login');
  for (const s of sessions) s.close();
  await Promise.all(sessions.map(closed));
});
