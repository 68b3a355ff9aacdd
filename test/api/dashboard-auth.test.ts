/**
 * The dashboard against abuse, through HTTP (Fastify inject): the form token on multipart posts,
 * login and password-change throttling under parallel guesses, password reset by e-mailed link,
 * and sign-up limits (per address, the hashing pool, address and name rules, SIGNUP modes).
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { harness, type Harness } from '../helpers/harness.ts';
import { csrfToken, DashboardClient, dashboardLogIn, signedUpOwner, TINY_PDF } from '../helpers/dashboard-client.ts';
import { createOperator } from '../../src/services/auth/operators.ts';
import { hashPool } from '../../src/services/auth/passwords.ts';
import { registerSenderId } from '../../src/services/sender-ids/sender-ids.ts';

const PASSWORD = 'correct horse battery';

const signUp = (h: Harness, email: string, name = 'Acme Ltd') => signedUpOwner(h.app, email, PASSWORD, name);
const logIn = (h: Harness, email: string, password = PASSWORD) => dashboardLogIn(h.app, email, password);

async function owner(h: Harness, email: string) {
  return h.ctx.store.db.selectFrom('owners').selectAll().where('email', '=', email).executeTakeFirstOrThrow();
}

async function outbox(h: Harness, to: string) {
  return h.ctx.store.db.selectFrom('mail_outbox').selectAll().where('to_address', '=', to).orderBy('created_at').orderBy('id').execute();
}

/** The one-time nonce of the Generate New Key form on a page. */
function keyFormNonce(body: string): string {
  const m = /name="nonce" value="([^"]+)"/.exec(body);
  assert.ok(m, 'the key form carries a nonce');
  return m[1]!;
}

function linkIn(text: string, path: string): string {
  const m = new RegExp(`https://pigeon\\.test(/dashboard/${path}\\?token=[A-Za-z0-9_-]+)`).exec(text);
  assert.ok(m, `a ${path} link in: ${text}`);
  return m[1]!;
}

describe('dashboard: the form token on multipart posts', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  test('owner: multipart posts without the token are refused with invalid_csrf_token and change nothing', async () => {
    const client = await signUp(h, 'multipart@example.com');
    const keys = await client.get('/dashboard/settings/api-keys');
    assert.equal((await client.post('/dashboard/settings/api-keys', { label: 'kept', scopes: 'sms:send', nonce: keyFormNonce(keys.body) }, keys.body)).statusCode, 200);
    const { account_id: accountId } = await owner(h, 'multipart@example.com');
    const key = await h.ctx.store.db.selectFrom('api_keys').selectAll().where('account_id', '=', accountId).executeTakeFirstOrThrow();
    const secretBefore = (await h.ctx.store.db.selectFrom('accounts').select('webhook_secret').where('id', '=', accountId).executeTakeFirstOrThrow()).webhook_secret;

    const forged = [
      ['/dashboard/settings/webhook/rotate', {}],
      [`/dashboard/settings/api-keys/${key.id}/revoke`, {}],
      ['/dashboard/logout', {}],
      ['/dashboard/sender-ids', { name: 'Forged' }],
      // The token must be the first part: a forged form cannot put it anywhere else either.
      ['/dashboard/sender-ids', { name: 'Forged', _csrf: 'A'.repeat(43) }],
    ] as const;
    for (const [url, fields] of forged) {
      const files = url === '/dashboard/sender-ids' ? [{ name: 'documents', filename: 'a.pdf', type: 'application/pdf', bytes: TINY_PDF }] : [];
      const res = await client.postMultipart(url, fields, files);
      assert.equal(res.statusCode, 403, `${url}: ${res.body}`);
      assert.match(res.body, /form has expired or did not come from this site/);
    }

    const secretAfter = (await h.ctx.store.db.selectFrom('accounts').select('webhook_secret').where('id', '=', accountId).executeTakeFirstOrThrow()).webhook_secret;
    assert.equal(secretAfter, secretBefore, 'the webhook secret was not rotated');
    const keyAfter = await h.ctx.store.db.selectFrom('api_keys').select('revoked_at').where('id', '=', key.id).executeTakeFirstOrThrow();
    assert.equal(keyAfter.revoked_at, null, 'the key was not revoked');
    assert.equal((await client.get('/dashboard')).statusCode, 200, 'the session was not logged out');
    const senders = await h.ctx.store.db.selectFrom('sender_ids').select('id').where('account_id', '=', accountId).execute();
    assert.equal(senders.length, 0, 'no Sender ID registered');
    assert.equal((await h.ctx.store.db.selectFrom('sender_id_documents').select('id').where('account_id', '=', accountId).execute()).length, 0);

    // The page's own forms still work: the token as the first part, or in the script's header.
    const page = await client.get('/dashboard/sender-ids');
    const ok = await client.postMultipart('/dashboard/sender-ids', { _csrf: csrfToken(page.body), name: 'Genuine' }, [
      { name: 'documents', filename: 'a.pdf', type: 'application/pdf', bytes: TINY_PDF },
    ]);
    assert.equal(ok.statusCode, 303, ok.body);
    const viaHeader = await h.app.inject({
      method: 'POST',
      url: '/dashboard/settings/webhook/rotate',
      headers: { cookie: [...client.cookies].map(([k, v]) => `${k}=${v}`).join('; '), 'x-csrf-token': csrfToken(page.body), 'content-type': 'multipart/form-data; boundary=x' },
      payload: '--x--\r\n',
    });
    assert.equal(viaHeader.statusCode, 200, viaHeader.body);
    const logout = await client.postMultipart('/dashboard/logout', { _csrf: csrfToken(page.body) }, []);
    assert.equal(logout.statusCode, 303, 'logout with the token as its first part');
  });

  test('operator: multipart posts without the token are refused and change nothing', async () => {
    await createOperator(h.ctx, 'ops@example.com', 'operator password');
    const ops = new DashboardClient(h.app);
    const form = await ops.get('/operator/login');
    assert.equal((await ops.post('/operator/login', { email: 'ops@example.com', password: 'operator password' }, form.body)).statusCode, 303);
    const { account_id: accountId } = await owner(h, 'multipart@example.com');
    const pending = await registerSenderId(h.ctx, accountId, 'Pending1');
    for (const url of [`/operator/sender-ids/${pending.id}/approve`, `/operator/accounts/${accountId}/suspend`, '/operator/logout']) {
      const res = await ops.postMultipart(url, { reason: 'x' }, []);
      assert.equal(res.statusCode, 403, url);
    }
    assert.equal((await h.ctx.store.db.selectFrom('sender_ids').select('status').where('id', '=', pending.id).executeTakeFirstOrThrow()).status, 'pending');
    assert.equal((await h.ctx.store.db.selectFrom('accounts').select('status').where('id', '=', accountId).executeTakeFirstOrThrow()).status, 'active');
    assert.equal((await ops.get('/operator/sender-ids')).statusCode, 200, 'still logged in');
  });
});

describe('dashboard: password guessing under parallel tries', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  test('50 parallel wrong passwords for one owner: at most 5 are checked, the rest 429 login_locked; the right one is then locked out too', async () => {
    await signUp(h, 'target@example.com');
    const client = new DashboardClient(h.app);
    const form = await client.get('/dashboard/login');
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => client.post('/dashboard/login', { email: 'target@example.com', password: `wrong guess ${i}` }, form.body)),
    );
    const checked = results.filter((r) => r.statusCode === 401).length;
    const locked = results.filter((r) => r.statusCode === 429);
    assert.ok(checked <= 5, `${checked} passwords were checked`);
    assert.equal(checked + locked.length, 50, `statuses: ${results.map((r) => r.statusCode).join(',')}`);
    for (const r of locked) assert.ok(Number(r.headers['retry-after']) > 0, 'Retry-After on every 429');
    assert.match(locked[0]!.body, /Too many failed logins/);

    const right = await client.post('/dashboard/login', { email: 'target@example.com', password: PASSWORD }, form.body);
    assert.equal(right.statusCode, 429, 'the right password is locked out as well');
    h.clock.advance(15 * 60 * 1000 + 1);
    assert.equal((await client.post('/dashboard/login', { email: 'target@example.com', password: PASSWORD }, form.body)).statusCode, 303);
  });

  test('a right password gives its try back: four wrong, one right, four wrong is not a lockout', async () => {
    await signUp(h, 'typo@example.com');
    const client = new DashboardClient(h.app);
    const form = await client.get('/dashboard/login');
    const wrong = () => client.post('/dashboard/login', { email: 'typo@example.com', password: 'not the password' }, form.body);
    for (let i = 0; i < 4; i++) assert.equal((await wrong()).statusCode, 401);
    assert.equal((await client.post('/dashboard/login', { email: 'typo@example.com', password: PASSWORD }, form.body)).statusCode, 303);
    for (let i = 0; i < 4; i++) assert.equal((await wrong()).statusCode, 401);
    assert.equal((await logIn(h, 'typo@example.com')).res.statusCode, 303);
  });

  test('password change is throttled the same way: parallel wrong current passwords, then the right one is locked out', async () => {
    const client = await signUp(h, 'change@example.com');
    const page = await client.get('/dashboard/settings/password');
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => client.post('/dashboard/settings/password', { current: `wrong current ${i}`, next: 'a brand new password' }, page.body)),
    );
    const checked = results.filter((r) => r.statusCode === 401).length;
    assert.ok(checked <= 5, `${checked} current passwords were checked`);
    assert.equal(results.filter((r) => r.statusCode === 429).length, 20 - checked);
    const right = await client.post('/dashboard/settings/password', { current: PASSWORD, next: 'a brand new password' }, page.body);
    assert.equal(right.statusCode, 429);
    assert.ok(Number(right.headers['retry-after']) > 0);
    assert.equal((await logIn(h, 'change@example.com', 'a brand new password')).res.statusCode, 429, 'the login form shares the lockout');
    h.clock.advance(15 * 60 * 1000 + 1);
    assert.equal((await logIn(h, 'change@example.com')).res.statusCode, 303, 'the password did not change');
  });
});

describe('dashboard: password reset by e-mailed link', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  test('"Forgot password?" answers the same for any address, mails a single-use link valid 30 minutes, and the reset ends every session', async () => {
    const first = await signUp(h, 'forgetful@example.com');
    const second = (await logIn(h, 'forgetful@example.com')).client;
    assert.equal((await second.get('/dashboard')).statusCode, 200);

    const login = await new DashboardClient(h.app).get('/dashboard/login');
    assert.match(login.body, /href="\/dashboard\/forgot-password">Forgot password\?/);
    const visitor = new DashboardClient(h.app);
    const form = await visitor.get('/dashboard/forgot-password');
    const known = await visitor.post('/dashboard/forgot-password', { email: 'Forgetful@example.com' }, form.body);
    const unknown = await visitor.post('/dashboard/forgot-password', { email: 'nobody@example.com' }, form.body);
    assert.equal(known.statusCode, 200);
    assert.equal(unknown.statusCode, 200);
    assert.equal(known.body, unknown.body, 'the answer does not tell whether the address has an account');
    assert.equal((await outbox(h, 'nobody@example.com')).length, 0);
    const mails = await outbox(h, 'forgetful@example.com');
    assert.equal(mails.length, 1);
    const link = linkIn(mails[0]!.body_text, 'reset-password');
    const token = new URL(link, 'https://pigeon.test').searchParams.get('token')!;
    const stored = await h.ctx.store.db.selectFrom('owner_tokens').selectAll().execute();
    assert.ok(stored.length > 0 && stored.every((t) => !JSON.stringify(t).includes(token)), 'only a digest of the token is stored');

    const resetForm = await visitor.get(link);
    assert.equal(resetForm.statusCode, 200);
    const short = await visitor.post('/dashboard/reset-password', { token, password: 'short' }, resetForm.body);
    assert.equal(short.statusCode, 400);
    const done = await visitor.post('/dashboard/reset-password', { token, password: 'a fresh long password' }, resetForm.body);
    assert.equal(done.statusCode, 200, done.body);
    assert.match(done.body, /password was changed/);
    assert.equal((await first.get('/dashboard')).statusCode, 303, 'the sign-up session ended');
    assert.equal((await second.get('/dashboard')).statusCode, 303, 'the other session ended');
    assert.equal((await logIn(h, 'forgetful@example.com')).res.statusCode, 401, 'the old password no longer works');
    assert.equal((await logIn(h, 'forgetful@example.com', 'a fresh long password')).res.statusCode, 303);

    const again = await visitor.post('/dashboard/reset-password', { token, password: 'yet another password' }, resetForm.body);
    assert.equal(again.statusCode, 400, 'the link works once');
    assert.equal((await visitor.get(link)).statusCode, 400);

    // A second link expires after 30 minutes.
    await visitor.post('/dashboard/forgot-password', { email: 'forgetful@example.com' }, form.body);
    const later = linkIn((await outbox(h, 'forgetful@example.com')).at(-1)!.body_text, 'reset-password');
    h.clock.advance(30 * 60 * 1000 + 1);
    assert.equal((await visitor.get(later)).statusCode, 400);
    const expired = await visitor.post('/dashboard/reset-password', { token: new URL(later, 'https://pigeon.test').searchParams.get('token')!, password: 'expired link password' }, resetForm.body);
    assert.equal(expired.statusCode, 400);
    assert.equal((await logIn(h, 'forgetful@example.com', 'expired link password')).res.statusCode, 401);
  });
});

describe('dashboard: sign-up limits', () => {
  const harnesses: Harness[] = [];
  const make = async (env: Record<string, string> = {}) => {
    const h = await harness(env);
    harnesses.push(h);
    return h;
  };
  const poolLimits = { concurrency: hashPool.concurrency, maxWaiting: hashPool.maxWaiting };
  afterEach(async () => {
    Object.assign(hashPool, poolLimits);
    while (harnesses.length > 0) await harnesses.pop()!.close();
  });

  async function accounts(h: Harness): Promise<number> {
    return (await h.ctx.store.db.selectFrom('owners').select('id').execute()).length;
  }

  test('5 sign-ups an hour per address: 40 in parallel make 5 accounts, the rest 429 rate_limit_exceeded', async () => {
    const h = await make({ SIGNUP_MAX_PER_HOUR: '5' });
    const client = new DashboardClient(h.app);
    const form = await client.get('/dashboard/signup');
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => client.post('/dashboard/signup', { name: `Flood ${i}`, email: `flood${i}@example.com`, password: PASSWORD }, form.body)),
    );
    assert.equal(results.filter((r) => r.statusCode === 303).length, 5);
    const limited = results.filter((r) => r.statusCode === 429);
    assert.equal(limited.length, 35);
    for (const r of limited) assert.ok(Number(r.headers['retry-after']) > 0);
    assert.match(limited[0]!.body, /Too many sign-ups/);
    assert.equal(await accounts(h), 5);
    h.clock.advance(60 * 60 * 1000);
    assert.equal((await client.post('/dashboard/signup', { name: 'Next hour', email: 'next@example.com', password: PASSWORD }, form.body)).statusCode, 303);
  });

  test('password hashing runs in a bounded pool: beyond the queue, 503 service_unavailable with Retry-After', async () => {
    const h = await make();
    hashPool.concurrency = 1;
    hashPool.maxWaiting = 2;
    hashPool.peakRunning = 0;
    hashPool.peakWaiting = 0;
    const client = new DashboardClient(h.app);
    const form = await client.get('/dashboard/signup');
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => client.post('/dashboard/signup', { name: `Pool ${i}`, email: `pool${i}@example.com`, password: PASSWORD }, form.body)),
    );
    const created = results.filter((r) => r.statusCode === 303).length;
    const busy = results.filter((r) => r.statusCode === 503);
    assert.equal(created + busy.length, 40, `statuses: ${results.map((r) => r.statusCode).join(',')}`);
    assert.ok(busy.length > 0, 'some sign-ups were refused instead of queued');
    for (const r of busy) assert.ok(Number(r.headers['retry-after']) > 0);
    assert.ok(hashPool.peakRunning <= 1 && hashPool.peakWaiting <= 2, `peak ${hashPool.peakRunning} running, ${hashPool.peakWaiting} waiting`);
    assert.equal(await accounts(h), created, 'a refused sign-up makes no account');

    // Logins share the pool.
    hashPool.concurrency = 0;
    hashPool.maxWaiting = 0;
    const { res } = await logIn(h, 'pool0@example.com');
    assert.equal(res.statusCode, 503);
  });

  test('the e-mail must be a valid address by the HTML standard, at most 254 characters; the name at most 100', async () => {
    const h = await make();
    const client = new DashboardClient(h.app);
    const form = await client.get('/dashboard/signup');
    const post = (name: string, email: string) => client.post('/dashboard/signup', { name, email, password: PASSWORD }, form.body);
    for (const email of ['x<owner@corp>', 'Owner <owner@corp.example>', 'owner@corp.', 'owner@-corp.example', 'a b@corp.example', '"quoted"@corp.example']) {
      const res = await post('Acme', email);
      assert.equal(res.statusCode, 400, email);
    }
    const domain = '@example.com';
    assert.equal((await post('Acme', `${'a'.repeat(255 - domain.length)}${domain}`)).statusCode, 400, '255 characters');
    assert.equal((await post('x'.repeat(101), 'longname@example.com')).statusCode, 400, '101-character name');
    assert.equal((await post('   ', 'blankname@example.com')).statusCode, 400, 'blank name');
    assert.equal(await accounts(h), 0, 'nothing was created by a refused sign-up');

    assert.equal((await post('x'.repeat(100), 'owner@corp')).statusCode, 303, 'a dotless domain is valid by the HTML standard');
    assert.equal((await post('Long', `${'b'.repeat(254 - domain.length)}${domain}`)).statusCode, 303, '254 characters');
    const acct = await h.ctx.store.db.selectFrom('accounts').select('name').where('email', '=', 'owner@corp').executeTakeFirstOrThrow();
    assert.equal(acct.name.length, 100);
  });

  test('SIGNUP=verify: a uniform answer, an e-mailed link, and no keys or Sender IDs before it is followed', async () => {
    const h = await make({ SIGNUP: 'verify' });
    const client = new DashboardClient(h.app);
    const form = await client.get('/dashboard/signup');
    const fresh = await client.post('/dashboard/signup', { name: 'Careful Co', email: 'careful@example.com', password: PASSWORD }, form.body);
    assert.equal(fresh.statusCode, 200, fresh.body);
    assert.match(fresh.body, /id="check-email"/);
    assert.ok(!client.lastSetCookie.some((c) => c.startsWith('pigeon_session=')), 'no session before confirming');

    // The same address again: the same answer, and a mail to the owner instead of `email_taken`.
    const other = new DashboardClient(h.app);
    const form2 = await other.get('/dashboard/signup');
    const taken = await other.post('/dashboard/signup', { name: 'Someone Else', email: 'careful@example.com', password: 'another password!' }, form2.body);
    assert.equal(taken.statusCode, fresh.statusCode);
    assert.equal(taken.body, fresh.body, 'the answer does not reveal that the address has an account');
    assert.equal((await h.ctx.store.db.selectFrom('accounts').select('id').execute()).length, 1, 'no second account');
    const mails = await outbox(h, 'careful@example.com');
    assert.equal(mails.length, 2);
    assert.match(mails[1]!.subject, /tried to sign up/);

    // Logging in works; keys and Sender IDs wait for the link.
    const { client: session, res } = await logIn(h, 'careful@example.com');
    assert.equal(res.statusCode, 303);
    const overview = await session.get('/dashboard');
    assert.match(overview.body, /id="unverified"/);
    const keys = await session.get('/dashboard/settings/api-keys');
    const refused = await session.post('/dashboard/settings/api-keys', { label: 'early', scopes: 'sms:send', nonce: keyFormNonce(keys.body) }, keys.body);
    assert.equal(refused.statusCode, 403);
    assert.match(refused.body, /Confirm your e-mail address/);
    const senderPage = await session.get('/dashboard/sender-ids');
    const sender = await session.postMultipart('/dashboard/sender-ids', { _csrf: csrfToken(senderPage.body), name: 'Early' }, []);
    assert.equal(sender.statusCode, 403);
    assert.equal((await h.ctx.store.db.selectFrom('api_keys').select('id').execute()).length, 0);
    assert.equal((await h.ctx.store.db.selectFrom('sender_ids').select('id').execute()).length, 0);

    const verified = await new DashboardClient(h.app).get(linkIn(mails[0]!.body_text, 'verify'));
    assert.equal(verified.statusCode, 200);
    assert.match(verified.body, /id="verified"/);
    assert.doesNotMatch((await session.get('/dashboard')).body, /id="unverified"/);
    const keys2 = await session.get('/dashboard/settings/api-keys');
    assert.equal((await session.post('/dashboard/settings/api-keys', { label: 'now', scopes: 'sms:send', nonce: keyFormNonce(keys2.body) }, keys2.body)).statusCode, 200);
    assert.equal((await new DashboardClient(h.app).get(linkIn(mails[0]!.body_text, 'verify'))).statusCode, 400, 'the link works once');
  });

  test('SIGNUP=closed: the page says so, and every sign-up is refused the same way', async () => {
    const h = await make({ SIGNUP: 'closed' });
    await h.customer();
    const client = new DashboardClient(h.app);
    const page = await client.get('/dashboard/signup');
    assert.match(page.body, /id="signup-closed"/);
    assert.doesNotMatch(page.body, /<form method="post" action="\/dashboard\/signup"/);
    assert.doesNotMatch((await client.get('/dashboard/login')).body, /href="\/dashboard\/signup"/);
    const login = await client.get('/dashboard/login');
    const fresh = await client.post('/dashboard/signup', { name: 'New', email: 'new@example.com', password: PASSWORD }, login.body);
    const existing = await client.post('/dashboard/signup', { name: 'Old', email: 'owner1@example.com', password: PASSWORD }, login.body);
    assert.equal(fresh.statusCode, 403);
    assert.equal(existing.statusCode, 403);
    assert.equal(fresh.body, existing.body);
    assert.equal((await h.ctx.store.db.selectFrom('owners').select('id').execute()).length, 0);
  });
});
