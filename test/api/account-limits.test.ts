/**
 * Limits per account through the real HTTP interface: the pending Sender ID quota (API, parallel
 * requests), the document quota (dashboard uploads, parallel), the daily cap of self-signed-up
 * accounts (single and bulk, parallel, the next UTC day, lifted by the operator), the destination
 * allowlist (installation and account, single and bulk), safe document downloads, the paginated
 * review queue and the operator's limits page.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../src/config/config.ts';
import { addCredits, createAccount } from '../../src/services/accounts/accounts.ts';
import { setAccountLimits } from '../../src/services/accounts/account-limits.ts';
import { createApiKey } from '../../src/services/keys/api-keys.ts';
import { createOperator } from '../../src/services/auth/operators.ts';
import { approveSenderId, registerSenderId } from '../../src/services/sender-ids/sender-ids.ts';
import { csrfToken, DashboardClient, TINY_PDF } from '../helpers/dashboard-client.ts';
import { harness, type Harness } from '../helpers/harness.ts';

const PASSWORD = 'correct horse battery';

/** Signs an owner up through the dashboard; returns the client (logged in) and the account id. */
async function signUp(h: Harness, email: string): Promise<{ client: DashboardClient; accountId: string }> {
  const client = new DashboardClient(h.app);
  const form = await client.get('/dashboard/signup');
  const res = await client.post('/dashboard/signup', { name: `Owner ${email}`, email, password: PASSWORD }, form.body);
  assert.equal(res.statusCode, 303, res.body);
  const owner = await h.ctx.store.db.selectFrom('owners').select('account_id').where('email', '=', email).executeTakeFirstOrThrow();
  return { client, accountId: owner.account_id };
}

async function operatorClient(h: Harness): Promise<DashboardClient> {
  await createOperator(h.ctx, 'ops@example.com', 'operator password');
  const client = new DashboardClient(h.app);
  const form = await client.get('/operator/login');
  assert.equal((await client.post('/operator/login', { email: 'ops@example.com', password: 'operator password' }, form.body)).statusCode, 303);
  return client;
}

/** A key and an approved Sender ID `Acme` for an account, and credits. */
async function readyToSend(h: Harness, accountId: string, credits: number): Promise<string> {
  await addCredits(h.ctx, accountId, credits);
  await approveSenderId(h.ctx, (await registerSenderId(h.ctx, accountId, 'Acme')).id);
  return (await createApiKey(h.ctx, accountId, { label: 'test' })).key;
}

async function balance(h: Harness, accountId: string): Promise<number> {
  return Number((await h.ctx.store.db.selectFrom('accounts').select('credits').where('id', '=', accountId).executeTakeFirstOrThrow()).credits);
}

async function messageCount(h: Harness, accountId: string): Promise<number> {
  const row = await h.ctx.store.db.selectFrom('messages').select((eb) => eb.fn.countAll<number>().as('n')).where('account_id', '=', accountId).executeTakeFirstOrThrow();
  return Number(row.n);
}

test('the defaults are the documented ones', () => {
  const { limits } = loadConfig({});
  assert.deepEqual(limits, { senderIdPendingMax: 20, documentQuotaBytes: 50 * 1024 * 1024, newAccountDailyLimit: 1000, allowedCountries: null });
  assert.deepEqual(loadConfig({ ALLOWED_COUNTRIES: '+44, 33' }).limits.allowedCountries, ['33', '44']);
  assert.throws(() => loadConfig({ ALLOWED_COUNTRIES: '44,UK' }), /ALLOWED_COUNTRIES/);
});

describe('pending Sender ID quota (POST /v1/sms/sender-ids)', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  test('30 parallel registrations: exactly 20 are accepted, the rest get 422 quota_exceeded naming the quota', async () => {
    const { key, accountId } = await h.customer();
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => h.request('POST', '/v1/sms/sender-ids', { key, body: { name: `Brand${i}` } })),
    );
    const created = results.filter((r) => r.statusCode === 201);
    const refused = results.filter((r) => r.statusCode === 422);
    assert.equal(created.length, 20);
    assert.equal(refused.length, 10);
    for (const r of refused) {
      assert.equal(r.json().code, 'quota_exceeded');
      assert.match(r.json().message, /20 of 20 pending Sender IDs/);
    }
    const pending = await h.ctx.store.db.selectFrom('sender_ids').select('id').where('account_id', '=', accountId).where('status', '=', 'pending').execute();
    assert.equal(pending.length, 20, 'nothing beyond the quota was stored');

    // A reviewed one frees its place; the operator can raise the quota.
    await approveSenderId(h.ctx, created[0]!.json().data.id);
    assert.equal((await h.request('POST', '/v1/sms/sender-ids', { key, body: { name: 'AfterReview' } })).statusCode, 201);
    assert.equal((await h.request('POST', '/v1/sms/sender-ids', { key, body: { name: 'OneTooMany' } })).statusCode, 422);
    await setAccountLimits(h.ctx, accountId, { pendingSenderIds: 21 });
    assert.equal((await h.request('POST', '/v1/sms/sender-ids', { key, body: { name: 'OneTooMany' } })).statusCode, 201);
  });

  test('the quota is per account', async () => {
    const other = await h.customer();
    assert.equal((await h.request('POST', '/v1/sms/sender-ids', { key: other.key, body: { name: 'Brand0' } })).statusCode, 201);
  });
});

describe('document quota (dashboard Sender ID registration)', () => {
  let h: Harness;
  // Small numbers keep the test light; the default (50 MiB) is checked above.
  const QUOTA = 100_000;
  const DOC = Buffer.concat([TINY_PDF, Buffer.alloc(30_000 - TINY_PDF.length, 0x20)]);
  before(async () => {
    h = await harness({ DOCUMENT_QUOTA_BYTES: String(QUOTA) });
  });
  after(() => h.close());

  test('parallel uploads stop at the quota; a refused registration stores neither the Sender ID nor its document', async () => {
    const { client, accountId } = await signUp(h, 'docs@example.com');
    const page = await client.get('/dashboard/sender-ids');
    const token = csrfToken(page.body);
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        client.postMultipart('/dashboard/sender-ids', { _csrf: token, name: `Docs${i}` }, [{ name: 'documents', filename: `extract${i}.pdf`, type: 'application/pdf', bytes: DOC }]),
      ),
    );
    const accepted = results.filter((r) => r.statusCode === 303).length;
    const refused = results.filter((r) => r.statusCode === 422);
    assert.equal(accepted, 3, '3 x 30,000 bytes fit in 100,000; a 4th does not');
    assert.equal(refused.length, 5);
    for (const r of refused) assert.match(r.body, /Document storage quota reached: 0\.1 MiB of 0\.1 MiB stored/);
    const docs = await h.ctx.store.db.selectFrom('sender_id_documents').select(['size', 'sender_id_id']).where('account_id', '=', accountId).execute();
    assert.equal(docs.length, 3);
    assert.ok(docs.reduce((n, d) => n + Number(d.size), 0) <= QUOTA);
    const senders = await h.ctx.store.db.selectFrom('sender_ids').select('id').where('account_id', '=', accountId).execute();
    assert.equal(senders.length, 3, 'the refused registrations left no Sender ID behind');

    // Without documents a registration does not touch the document quota.
    const plain = await client.postMultipart('/dashboard/sender-ids', { _csrf: token, name: 'NoDocs' }, []);
    assert.equal(plain.statusCode, 303);
  });
});

describe('daily message cap of accounts made by dashboard sign-up', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  test('1,000 a UTC day: a bulk that would cross it is refused whole, parallel sends stop exactly at it', async () => {
    const { accountId } = await signUp(h, 'fresh@example.com');
    const key = await readyToSend(h, accountId, 5000);
    const bulk = (n: number) =>
      h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', messages: Array.from({ length: n }, () => ({ to: '+447911123456', message: 'hi' })) } });
    assert.equal((await bulk(995)).statusCode, 200);

    const crossing = await bulk(10);
    assert.equal(crossing.statusCode, 429);
    assert.equal(crossing.json().code, 'daily_limit_reached');
    assert.match(crossing.json().message, /995 of 1,000 messages sent today \(UTC\); this request has 10/);
    // The test clock stands at 12:00 UTC: the count starts again in 12 hours.
    assert.equal(crossing.headers['retry-after'], String(12 * 3600));
    assert.equal(await balance(h, accountId), 5000 - 995, 'nothing debited');
    assert.equal(await messageCount(h, accountId), 995, 'nothing queued');

    const singles = await Promise.all(Array.from({ length: 10 }, () => h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'hi' } })));
    assert.equal(singles.filter((r) => r.statusCode === 200).length, 5);
    const refused = singles.filter((r) => r.statusCode === 429);
    assert.equal(refused.length, 5);
    for (const r of refused) assert.equal(r.json().code, 'daily_limit_reached');
    assert.equal(await messageCount(h, accountId), 1000);
    assert.equal(await balance(h, accountId), 4000);

    // The next UTC day starts a new count.
    h.clock.advance(12 * 3600 * 1000);
    const tomorrow = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'hi' } });
    assert.equal(tomorrow.statusCode, 200, tomorrow.body);
    assert.equal((await bulk(1000)).statusCode, 429, '1 + 1,000 is over the cap');
    assert.equal((await bulk(999)).statusCode, 200);

    // Lifted by the operator: no cap at all.
    await setAccountLimits(h.ctx, accountId, { dailyMessages: null });
    assert.equal((await bulk(50)).statusCode, 200);
  });

  test('accounts the operator makes have no cap', async () => {
    const { key, accountId } = await h.customer({ credits: 2000 });
    const res = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', messages: Array.from({ length: 1001 }, () => ({ to: '+447911123456', message: 'hi' })) } });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().queued, 1001);
    assert.equal(await messageCount(h, accountId), 1001);
  });

  test('an operator-set cap applies to the next send, without a restart', async () => {
    const { key, accountId } = await h.customer({ credits: 100 });
    const send = () => h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'hi' } });
    assert.equal((await send()).statusCode, 200);
    await setAccountLimits(h.ctx, accountId, { dailyMessages: 2 });
    assert.equal((await send()).statusCode, 200, 'the message before the cap counts');
    assert.equal((await send()).json().code, 'daily_limit_reached');
  });
});

describe('destination allowlist', () => {
  let h: Harness;
  before(async () => {
    h = await harness({ ALLOWED_COUNTRIES: '44,33' });
  });
  after(() => h.close());

  const UK = '+447911123456';
  const FR = '+33612345678';
  const US = '+14155552671';

  test('single send: a country outside ALLOWED_COUNTRIES is 400 destination_not_allowed, nothing debited', async () => {
    const { key, accountId } = await h.customer({ credits: 10 });
    const refused = await h.request('POST', '/v1/sms/send', { key, body: { to: US, from: 'Acme', message: 'hi' } });
    assert.equal(refused.statusCode, 400);
    assert.equal(refused.json().code, 'destination_not_allowed');
    assert.match(refused.json().message, /\+1 numbers/);
    assert.equal(await balance(h, accountId), 10);
    assert.equal((await h.request('POST', '/v1/sms/send', { key, body: { to: UK, from: 'Acme', message: 'hi' } })).statusCode, 200);
    assert.equal((await h.request('POST', '/v1/sms/send', { key, body: { to: FR, from: 'Acme', message: 'hi' } })).statusCode, 200);
  });

  test('bulk: disallowed entries are per-entry errors, the others are sent', async () => {
    const { key, accountId } = await h.customer({ credits: 10 });
    const res = await h.request('POST', '/v1/sms/bulk', {
      key,
      body: { from: 'Acme', messages: [UK, US, FR, '+2348031234567'].map((to) => ({ to, message: 'hi' })) },
    });
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.equal(body.queued, 2);
    assert.deepEqual(
      body.errors.map((e: { index: number; code: string }) => [e.index, e.code]),
      [
        [1, 'destination_not_allowed'],
        [3, 'destination_not_allowed'],
      ],
    );
    assert.equal(await balance(h, accountId), 8);
  });

  test('an account list narrows the installation list, and applies to the very next send', async () => {
    const { key, accountId } = await h.customer({ credits: 20 });
    const toFrance = () => h.request('POST', '/v1/sms/send', { key, body: { to: FR, from: 'Acme', message: 'hi' } });
    // The first send's commit brings this process up to the current access revision; the second
    // caches the account's list under it. The change below is then seen by the send's commit,
    // which checks again what the request saw from the cache.
    assert.equal((await toFrance()).statusCode, 200);
    assert.equal((await toFrance()).statusCode, 200, 'allowed, and now in the access cache');
    await setAccountLimits(h.ctx, accountId, { countries: '44' });
    const refused = await toFrance();
    assert.equal(refused.statusCode, 400);
    assert.equal(refused.json().code, 'destination_not_allowed');
    assert.match(refused.json().message, /This account may not send to \+33/);
    assert.equal((await h.request('POST', '/v1/sms/send', { key, body: { to: UK, from: 'Acme', message: 'hi' } })).statusCode, 200);
    // A code outside the installation's list stays refused: the account list only narrows.
    await setAccountLimits(h.ctx, accountId, { countries: '1,44' });
    assert.equal((await h.request('POST', '/v1/sms/send', { key, body: { to: US, from: 'Acme', message: 'hi' } })).json().code, 'destination_not_allowed');
    await setAccountLimits(h.ctx, accountId, { countries: null });
    assert.equal((await toFrance()).statusCode, 200);
  });

  test('a country allowed by another process is not refused from the list this process cached: the refusal is confirmed on the current access revision', async () => {
    const { key, accountId } = await h.customer({ credits: 20 });
    const send = (to: string) => h.request('POST', '/v1/sms/send', { key, body: { to, from: 'Acme', message: 'hi' } });
    await setAccountLimits(h.ctx, accountId, { countries: '44' });
    // The first send's commit brings this process up to the list's revision; the second caches the list under it.
    assert.equal((await send(UK)).statusCode, 200);
    assert.equal((await send(UK)).statusCode, 200);
    // Plain SQL, as another process would write it: nothing in this process hears of it.
    await h.ctx.store.db.updateTable('accounts').set({ allowed_countries: null }).where('id', '=', accountId).execute();
    assert.equal((await send(FR)).statusCode, 200, 'a single send');
    await h.ctx.store.db.updateTable('accounts').set({ allowed_countries: '44' }).where('id', '=', accountId).execute();
    assert.equal((await send(UK)).statusCode, 200, 'the narrower list cached again');
    await h.ctx.store.db.updateTable('accounts').set({ allowed_countries: null }).where('id', '=', accountId).execute();
    const bulk = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', messages: [{ to: FR, message: 'hi' }, { to: UK, message: 'hi' }] } });
    assert.equal(bulk.statusCode, 200);
    assert.deepEqual([bulk.json().queued, bulk.json().errors], [2, []], 'a bulk');
    assert.equal(await balance(h, accountId), 20 - 6);
  });
});

describe('account destination list without an installation list', () => {
  test('every country by default; the account list restricts that account only', async () => {
    const h = await harness();
    try {
      const a = await h.customer({ credits: 10 });
      const b = await h.customer({ credits: 10 });
      await setAccountLimits(h.ctx, a.accountId, { countries: '44' });
      const send = (key: string, to: string) => h.request('POST', '/v1/sms/send', { key, body: { to, from: 'Acme', message: 'hi' } });
      assert.equal((await send(a.key, '+14155552671')).json().code, 'destination_not_allowed');
      assert.equal((await send(a.key, '+447911123456')).statusCode, 200);
      assert.equal((await send(b.key, '+14155552671')).statusCode, 200);
      const bulk = await h.request('POST', '/v1/sms/bulk', { key: a.key, body: { from: 'Acme', messages: [{ to: '+14155552671', message: 'hi' }] } });
      assert.equal(bulk.statusCode, 200);
      assert.equal(bulk.json().queued, 0);
      assert.equal(bulk.json().errors[0].code, 'destination_not_allowed');
    } finally {
      await h.close();
    }
  });
});

describe('operator console: document downloads, review queue pages, limits', () => {
  let h: Harness;
  let ops: DashboardClient;
  before(async () => {
    h = await harness();
    ops = await operatorClient(h);
  });
  after(() => h.close());

  test('a document downloads as an attachment named by its sniffed type, with nosniff and a sandbox', async () => {
    const { client } = await signUp(h, 'uploader@example.com');
    const page = await client.get('/dashboard/sender-ids');
    const res = await client.postMultipart('/dashboard/sender-ids', { _csrf: csrfToken(page.body), name: 'Uploader' }, [
      { name: 'documents', filename: 'invoice.html', type: 'text/html', bytes: TINY_PDF },
    ]);
    assert.equal(res.statusCode, 303, res.body);
    const queue = await ops.get('/operator/sender-ids');
    const href = /href="(\/operator\/documents\/[^"]+)">invoice\.html/.exec(queue.body)![1]!;
    for (const [who, url] of [
      [ops, href],
      [client, /href="(\/dashboard\/sender-ids\/documents\/[^"]+)"/.exec((await client.get('/dashboard/sender-ids')).body)![1]!],
    ] as const) {
      const doc = await who.get(url);
      assert.equal(doc.statusCode, 200);
      assert.equal(doc.headers['content-type'], 'application/pdf');
      assert.match(String(doc.headers['content-disposition']), /^attachment; filename="invoice\.pdf"; filename\*=UTF-8''invoice\.pdf$/);
      assert.equal(doc.headers['x-content-type-options'], 'nosniff');
      assert.equal(doc.headers['content-security-policy'], "sandbox; default-src 'none'");
      assert.deepEqual(doc.rawPayload, TINY_PDF);
    }
  });

  test('the review queue is paginated, oldest first, and a decision returns to its page', async () => {
    // Two operator-made accounts: each may have 20 pending.
    const names: string[] = [];
    for (const n of [0, 1]) {
      const account = await createAccount(h.ctx, { name: `Queue ${n}`, email: `queue${n}@example.com` });
      for (let i = 0; i < 15; i++) {
        h.clock.advance(1);
        const name = `Q${n}x${String(i).padStart(2, '0')}`;
        await registerSenderId(h.ctx, account.id, name);
        names.push(name);
      }
    }
    const first = await ops.get('/operator/sender-ids');
    const namesOn = (body: string) => [...body.matchAll(/<h2 id="title-[^"]+">(\w+) /g)].map((m) => m[1]);
    const page1 = namesOn(first.body);
    assert.equal(page1.length, 25);
    assert.equal(page1[0], 'Uploader', 'oldest first: the earlier upload leads');
    assert.match(first.body, /Page 1 of 2/);
    assert.match(first.body, /31 Sender IDs waiting for review/);
    assert.match(first.body, /href="\/operator\/sender-ids\?page=2" rel="next"/);
    const second = await ops.get('/operator/sender-ids?page=2');
    const page2 = namesOn(second.body);
    assert.deepEqual(page2, names.slice(24));
    assert.match(second.body, /rel="prev"/);
    assert.doesNotMatch(second.body, /rel="next"/);

    const id = /id="review-([^"]+)"/.exec(second.body)![1]!;
    const decided = await ops.post(`/operator/sender-ids/${id}/approve`, { page: '2' }, second.body);
    assert.equal(decided.statusCode, 303);
    assert.match(String(decided.headers.location), /^\/operator\/sender-ids\?page=2&done=/);
    assert.equal(namesOn((await ops.get('/operator/sender-ids?page=2')).body).length, 5);
  });

  test('the operator sees and changes an account’s limits', async () => {
    const { accountId } = await signUp(h, 'limits@example.com');
    const list = await ops.get(`/operator/accounts?q=${accountId}`);
    assert.match(list.body, new RegExp(`href="/operator/accounts/${accountId}/limits"`));
    const page = await ops.get(`/operator/accounts/${accountId}/limits`);
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /made by dashboard sign-up/);
    assert.match(page.body, /id="usage-pending">0 of 20</);
    assert.match(page.body, /id="usage-documents">0 B of 50\.0 MiB</);
    assert.match(page.body, /id="usage-daily">0 sent today of 1000</);
    assert.match(page.body, /id="usage-countries">all the installation allows \(every country\)</);

    const saved = await ops.post(`/operator/accounts/${accountId}/limits`, { pending_sender_ids: '5', document_bytes: String(50 * 1024 * 1024), daily_messages: '', countries: '33, 44' }, page.body);
    assert.equal(saved.statusCode, 303);
    const after = await ops.get(`/operator/accounts/${accountId}/limits`);
    assert.match(after.body, /id="usage-pending">0 of 5</);
    assert.match(after.body, /id="usage-documents">0 B of 50\.0 MiB<\/span> <span class="muted">\(installation default\)/);
    assert.match(after.body, /id="usage-daily">no cap</);
    assert.match(after.body, /id="usage-countries">\+33, \+44 /);

    const bad = await ops.post(`/operator/accounts/${accountId}/limits`, { pending_sender_ids: '5', document_bytes: '1', daily_messages: '', countries: '44,XX' }, page.body);
    assert.equal(bad.statusCode, 400);
    const noCsrf = await ops.post(`/operator/accounts/${accountId}/limits`, { pending_sender_ids: '500', document_bytes: '1', daily_messages: '', countries: '' });
    assert.equal(noCsrf.statusCode, 403);
  });
});
