/**
 * The owner's dashboard through HTTP (Fastify inject): sign-up and login, cookies and CSRF,
 * lockout, API keys shown once and revoked, Sender IDs with documents, and the /v1 API staying
 * JSON-only beside the dashboard's form parsers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { harness, type Harness } from '../helpers/harness.ts';
import { hashCost } from '../../src/services/auth/passwords.ts';
import { csrfToken, DashboardClient, TINY_PDF, TINY_PNG } from '../helpers/dashboard-client.ts';

const PASSWORD = 'correct horse battery';

async function signUp(h: Harness, email: string, name = 'Acme Ltd') {
  const client = new DashboardClient(h.app);
  const form = await client.get('/dashboard/signup');
  assert.equal(form.statusCode, 200);
  const res = await client.post('/dashboard/signup', { name, email, password: PASSWORD }, form.body);
  assert.equal(res.statusCode, 303, res.body);
  assert.equal(res.headers.location, '/dashboard');
  return client;
}

describe('dashboard: owners', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  test('sign-up creates an active account with 0 credits and a session cookie (HttpOnly, Secure, SameSite=Lax)', async () => {
    const client = await signUp(h, 'Founder@Example.com', 'Founder Co');
    const cookie = client.lastSetCookie.find((c) => c.startsWith('pigeon_session='));
    assert.ok(cookie, 'a session cookie is set');
    assert.match(cookie, /HttpOnly/);
    assert.match(cookie, /Secure/); // PUBLIC_URL is https in the harness
    assert.match(cookie, /SameSite=Lax/);
    assert.match(cookie, /Path=\/dashboard/);
    const overview = await client.get('/dashboard');
    assert.equal(overview.statusCode, 200);
    assert.match(overview.body, /Credit balance/);
    assert.match(overview.body, /id="balance">0</);
    const owner = await h.ctx.store.db.selectFrom('owners').selectAll().where('email', '=', 'founder@example.com').executeTakeFirstOrThrow();
    // At the process's cost (lowered in tests: src/services/auth/passwords.test.ts checks 2^17).
    assert.match(owner.password_hash, new RegExp(`^scrypt\\$${hashCost.N}\\$8\\$1\\$`));
    const account = await h.ctx.store.db.selectFrom('accounts').selectAll().where('id', '=', owner.account_id).executeTakeFirstOrThrow();
    assert.equal(account.status, 'active');
    assert.equal(Number(account.credits), 0);
    // Only a digest of the session token is stored.
    const token = cookie.split(';')[0]!.split('=')[1]!;
    const sessions = await h.ctx.store.db.selectFrom('sessions').selectAll().execute();
    assert.ok(sessions.length >= 1);
    assert.ok(sessions.every((s) => s.token_digest !== token && !JSON.stringify(s).includes(token)));

    const again = new DashboardClient(h.app);
    const form = await again.get('/dashboard/signup');
    const dup = await again.post('/dashboard/signup', { name: 'X', email: 'founder@example.com', password: PASSWORD }, form.body);
    assert.equal(dup.statusCode, 409);
    assert.match(dup.body, /already exists/);
  });

  test('pages need a session; forms need the CSRF token', async () => {
    const anonymous = new DashboardClient(h.app);
    const res = await anonymous.get('/dashboard/settings/api-keys');
    assert.equal(res.statusCode, 303);
    assert.equal(res.headers.location, '/dashboard/login');

    const client = await signUp(h, 'csrf@example.com');
    const noToken = await client.post('/dashboard/settings/api-keys', { label: 'x', scopes: 'sms:send' });
    assert.equal(noToken.statusCode, 403);
    assert.match(noToken.body, /form has expired/);
    const wrong = await client.post('/dashboard/settings/api-keys', { label: 'x', scopes: 'sms:send', _csrf: 'A'.repeat(43) });
    assert.equal(wrong.statusCode, 403);
    // A login form without its double-submit token is refused too.
    const login = await new DashboardClient(h.app).post('/dashboard/login', { email: 'csrf@example.com', password: PASSWORD, _csrf: 'nope' });
    assert.equal(login.statusCode, 403);
    assert.equal(await h.ctx.store.db.selectFrom('api_keys').select('id').where('label', '=', 'x').executeTakeFirst(), undefined);
  });

  test('login, logout, and lockout after five failures per e-mail and address', async () => {
    await signUp(h, 'lock@example.com');
    const client = new DashboardClient(h.app);
    let form = await client.get('/dashboard/login');
    const bad = await client.post('/dashboard/login', { email: 'lock@example.com', password: 'wrong password!' }, form.body);
    assert.equal(bad.statusCode, 401);
    assert.match(bad.body, /e-mail address or password is wrong/);
    const unknown = await client.post('/dashboard/login', { email: 'nobody@example.com', password: 'wrong password!' }, form.body);
    assert.equal(unknown.statusCode, 401);

    form = await client.get('/dashboard/login');
    const ok = await client.post('/dashboard/login', { email: 'LOCK@example.com', password: PASSWORD }, form.body);
    assert.equal(ok.statusCode, 303);
    const overview = await client.get('/dashboard');
    assert.equal(overview.statusCode, 200);
    const out = await client.post('/dashboard/logout', {}, overview.body);
    assert.equal(out.statusCode, 303);
    assert.equal((await client.get('/dashboard')).statusCode, 303);

    for (let i = 0; i < 5; i++) await client.post('/dashboard/login', { email: 'lock@example.com', password: `wrong ${i} password` }, form.body);
    const locked = await client.post('/dashboard/login', { email: 'lock@example.com', password: PASSWORD }, form.body);
    assert.equal(locked.statusCode, 429);
    assert.ok(Number(locked.headers['retry-after']) > 0);
    h.clock.advance(15 * 60 * 1000 + 1);
    const later = await client.post('/dashboard/login', { email: 'lock@example.com', password: PASSWORD }, form.body);
    assert.equal(later.statusCode, 303);
  });

  test('API keys: generated with a label and scopes, shown once, listed by prefix, revoked → 401 api_key_revoked', async () => {
    const client = await signUp(h, 'keys@example.com');
    const page = await client.get('/dashboard/settings/api-keys');
    assert.match(page.body, /Generate New Key/);
    const nonce = /name="nonce" value="([^"]+)"/.exec(page.body)![1]!;
    const created = await client.post('/dashboard/settings/api-keys', { label: 'Production <server>', scopes: ['account:read', 'reports:read'], nonce }, page.body);
    assert.equal(created.statusCode, 200);
    const key = /id="new-key">(pk_live_[0-9A-Za-z]{32})</.exec(created.body)?.[1];
    assert.ok(key, 'the full key is on the page once');
    assert.match(created.body, /Production &lt;server&gt;/); // escaped
    assert.doesNotMatch(created.body, /<server>/);

    const account = await h.request('GET', '/v1/account', { key });
    assert.equal(account.statusCode, 200);
    const send = await h.request('POST', '/v1/sms/send', { key, body: { to: '+14155550100', from: 'Acme', message: 'hi' } });
    assert.equal(send.statusCode, 403, 'the key has only the chosen scopes');

    const list = await client.get('/dashboard/settings/api-keys');
    assert.ok(!list.body.includes(key), 'the list never shows the whole key');
    assert.ok(list.body.includes(key.slice(0, 12)), 'it shows the prefix');
    assert.match(list.body, /account:read/);
    const revokeAction = /action="(\/dashboard\/settings\/api-keys\/[^"]+\/revoke)"/.exec(list.body)?.[1];
    assert.ok(revokeAction);
    const revoked = await client.post(revokeAction, {}, list.body);
    assert.equal(revoked.statusCode, 303);
    const refused = await h.request('GET', '/v1/account', { key });
    assert.equal(refused.statusCode, 401);
    assert.equal(refused.json().code, 'api_key_revoked');
    assert.match((await client.get('/dashboard/settings/api-keys')).body, /badge-revoked/);

    // Another owner cannot revoke this account's keys.
    const other = await signUp(h, 'keys-other@example.com');
    const keyId = /api-keys\/([^/]+)\/revoke/.exec(revokeAction)![1]!;
    const otherPage = await other.get('/dashboard/settings/api-keys');
    const foreign = await other.post(`/dashboard/settings/api-keys/${keyId}/revoke`, {}, otherPage.body);
    assert.equal(foreign.statusCode, 404);
  });

  test('Generate New Key posted twice (a reload of the result page) creates one key and says it was shown once', async () => {
    const client = await signUp(h, 'reload@example.com');
    const page = await client.get('/dashboard/settings/api-keys');
    const nonce = /name="nonce" value="([^"]+)"/.exec(page.body)![1]!;
    const form = { label: 'Reloaded', scopes: ['account:read'], nonce };
    const first = await client.post('/dashboard/settings/api-keys', form, page.body);
    assert.equal(first.statusCode, 200);
    assert.match(first.body, /id="new-key">pk_live_/);
    assert.equal(first.headers['cache-control'], 'no-store');

    const again = await client.post('/dashboard/settings/api-keys', form, page.body);
    assert.equal(again.statusCode, 409);
    assert.doesNotMatch(again.body, /id="new-key"/);
    assert.doesNotMatch(again.body, /pk_live_[0-9A-Za-z]{32}/, 'no key of any kind is on the page');
    assert.match(again.body, /already sent and its key was shown once/);
    const list = await client.get('/dashboard/settings/api-keys');
    assert.equal(list.body.match(/<td data-label="Label">Reloaded<\/td>/g)?.length, 1, 'exactly one key');

    // A post without the form's nonce (or with an old one) creates nothing either.
    const bare = await client.post('/dashboard/settings/api-keys', { label: 'Bare', scopes: ['account:read'] }, page.body);
    assert.equal(bare.statusCode, 409);
    assert.match(bare.body, /out of date/);
    assert.doesNotMatch((await client.get('/dashboard/settings/api-keys')).body, />Bare</);

    // Two tabs posting the same fresh form at once: one key.
    const fresh = await client.get('/dashboard/settings/api-keys');
    const twice = { label: 'Race', scopes: ['account:read'], nonce: /name="nonce" value="([^"]+)"/.exec(fresh.body)![1]! };
    const both = await Promise.all([client.post('/dashboard/settings/api-keys', twice, fresh.body), client.post('/dashboard/settings/api-keys', twice, fresh.body)]);
    assert.deepEqual(both.map((r) => r.statusCode).sort(), [200, 409]);
  });

  test('Sender IDs: the name is checked as you type; registration with documents; bad files refused', async () => {
    const client = await signUp(h, 'senders@example.com');
    const ok = await client.get('/dashboard/sender-ids/check?name=Acme', { 'hx-request': 'true' });
    assert.match(ok.body, /can be registered/);
    const bad = await client.get('/dashboard/sender-ids/check?name=My%20Shop');
    assert.match(bad.body, /whitespace/);
    const reserved = await client.get('/dashboard/sender-ids/check?name=PayPal');
    assert.match(reserved.body, /reserved/);

    const page = await client.get('/dashboard/sender-ids');
    const csrf = csrfToken(page.body);
    const res = await client.postMultipart('/dashboard/sender-ids', { _csrf: csrf, name: 'AcmeShop' }, [
      { name: 'documents', filename: 'register.pdf', type: 'application/pdf', bytes: TINY_PDF },
      { name: 'documents', filename: 'logo.png', type: 'image/png', bytes: TINY_PNG },
    ]);
    assert.equal(res.statusCode, 303, res.body);
    const list = await client.get('/dashboard/sender-ids');
    assert.match(list.body, /AcmeShop/);
    assert.match(list.body, /badge-pending">Pending/);
    assert.match(list.body, /register\.pdf/);
    const docLink = /href="(\/dashboard\/sender-ids\/documents\/[^"]+)">register\.pdf/.exec(list.body)![1]!;
    const doc = await client.get(docLink);
    assert.equal(doc.statusCode, 200);
    assert.equal(doc.headers['content-type'], 'application/pdf');
    assert.match(String(doc.headers['content-disposition']), /^attachment/);
    assert.deepEqual(doc.rawPayload, TINY_PDF);

    const exe = await client.postMultipart('/dashboard/sender-ids', { _csrf: csrf, name: 'Other' }, [
      { name: 'documents', filename: 'fake.pdf', type: 'application/pdf', bytes: Buffer.from('MZ not a pdf') },
    ]);
    assert.equal(exe.statusCode, 400);
    assert.match(exe.body, /not a PDF, PNG or JPEG/);
    const big = await client.postMultipart('/dashboard/sender-ids', { _csrf: csrf, name: 'Other' }, [
      { name: 'documents', filename: 'big.pdf', type: 'application/pdf', bytes: Buffer.concat([TINY_PDF, Buffer.alloc(10 * 1024 * 1024)]) },
    ]);
    assert.equal(big.statusCode, 400);
    assert.match(big.body, /larger than 10 MiB/);
    const noCsrf = await client.postMultipart('/dashboard/sender-ids', { name: 'Other' }, []);
    assert.equal(noCsrf.statusCode, 403);
    const badName = await client.postMultipart('/dashboard/sender-ids', { _csrf: csrf, name: 'Bad-Name' }, []);
    assert.equal(badName.statusCode, 400);
    const names = (await h.ctx.store.db.selectFrom('sender_ids').select('name').execute()).map((r) => r.name);
    assert.ok(!names.includes('Other') && !names.includes('Bad-Name'), 'nothing registered by a refused form');
  });

  test('password change needs the current password and ends other sessions', async () => {
    const first = await signUp(h, 'pw@example.com');
    const second = new DashboardClient(h.app);
    const form = await second.get('/dashboard/login');
    assert.equal((await second.post('/dashboard/login', { email: 'pw@example.com', password: PASSWORD }, form.body)).statusCode, 303);
    const page = await first.get('/dashboard/settings/password');
    const wrong = await first.post('/dashboard/settings/password', { current: 'not it at all', next: 'a new long password' }, page.body);
    assert.equal(wrong.statusCode, 401);
    const changed = await first.post('/dashboard/settings/password', { current: PASSWORD, next: 'a new long password' }, page.body);
    assert.equal(changed.statusCode, 200);
    assert.match(changed.body, /password was changed/);
    assert.equal((await first.get('/dashboard')).statusCode, 200);
    assert.equal((await second.get('/dashboard')).statusCode, 303, 'the other session ended');
  });

  test('the /v1 API still refuses form bodies with 415 beside the dashboard', async () => {
    const { key } = await h.customer();
    const res = await h.request('POST', '/v1/sms/send', { key, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'to=%2B14155550100' });
    assert.equal(res.statusCode, 415);
    assert.equal(res.json().code, 'unsupported_media_type');
    const multipart = await h.request('POST', '/v1/sms/send', { key, headers: { 'content-type': 'multipart/form-data; boundary=x' }, body: '--x--\r\n' });
    assert.equal(multipart.statusCode, 415);
  });

  test('an owner session does not open the operator area', async () => {
    const client = await signUp(h, 'not-operator@example.com');
    client.cookies.set('pigeon_operator', client.cookies.get('pigeon_session')!);
    const res = await client.get('/operator/sender-ids');
    assert.equal(res.statusCode, 303);
    assert.equal(res.headers.location, '/operator/login');
  });
});
