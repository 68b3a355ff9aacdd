/**
 * Hostile input, property-based (fast-check, fixed seed): malformed JSON, wrong types, huge and
 * deeply nested bodies, invalid UTF-8, lone surrogates, control characters, long headers,
 * injection strings and path tricks against every `/v1` endpoint, the public pages and the
 * dashboard forms. Every answer comes promptly, is never a 5xx, and every API error is JSON with
 * a catalogued code of its own status. `npm run fuzz` runs the same cases longer against a real
 * server and watches its memory.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { harness, type Harness } from '../helpers/harness.ts';
import { csrfToken, DashboardClient } from '../helpers/dashboard-client.ts';
import { describeCase, hostileCase, hostileString, judge, type Credentials, type HostileCase } from '../helpers/hostile.ts';
import { createOperator } from '../../src/services/auth/operators.ts';
import { registerSenderId } from '../../src/services/sender-ids/sender-ids.ts';

const SEED = 20261121;
const RUNS = 1000;
/** A request that takes longer than this is a hang, whatever it is doing. */
const HANG_MS = 15_000;

describe('hostile input', () => {
  let h: Harness;
  let creds: Credentials;
  let tried = 0;

  const cookieOf = (client: DashboardClient) => [...client.cookies].map(([k, v]) => `${k}=${v}`).join('; ');

  before(async () => {
    h = await harness();
    const customer = await h.customer({ credits: 1_000_000_000 });
    const owner = new DashboardClient(h.app);
    const signup = await owner.get('/dashboard/signup');
    assert.equal((await owner.post('/dashboard/signup', { name: 'Fuzz Owner', email: 'fuzz@example.com', password: 'fuzz password 123' }, signup.body)).statusCode, 303);
    const ownerPage = await owner.get('/dashboard/settings/api-keys');
    await createOperator(h.ctx, 'ops@example.com', 'operator password');
    const operator = new DashboardClient(h.app);
    const login = await operator.get('/operator/login');
    assert.equal((await operator.post('/operator/login', { email: 'ops@example.com', password: 'operator password' }, login.body)).statusCode, 303);
    const operatorPage = await operator.get('/operator/accounts');
    const pending = await registerSenderId(h.ctx, customer.accountId, 'Pending');
    creds = {
      key: customer.key,
      owner: { cookie: cookieOf(owner), csrf: csrfToken(ownerPage.body)! },
      operator: { cookie: cookieOf(operator), csrf: csrfToken(operatorPage.body)!, accountId: customer.accountId, senderIdId: pending.id },
    };
  });
  after(async () => {
    console.log(`# hostile input: ${tried} cases tried`);
    await h.close();
  });

  async function send(c: HostileCase) {
    tried++;
    let timer: NodeJS.Timeout | undefined;
    const hang = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${HANG_MS} ms: ${describeCase(c)}`)), HANG_MS)));
    try {
      return await Promise.race([h.app.inject({ method: c.method, url: c.url, headers: c.headers, ...(c.payload === undefined ? {} : { payload: c.payload }) }), hang]);
    } finally {
      clearTimeout(timer);
    }
  }

  test('every endpoint answers every hostile request with a catalogued 4xx (or a success), never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(hostileCase(creds, { avoidKnownIssues: true }), async (c) => {
        const res = await send(c);
        const wrong = judge(c, res.statusCode, res.headers['content-type'] as string | undefined, res.body);
        assert.equal(wrong, null, `${wrong}\n${describeCase(c)}`);
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
  });

  test('fixed worst cases: a body at the limit, megabytes of nesting, a 6 MiB body', async () => {
    const big = [
      '['.repeat(2_500_000) + ']'.repeat(2_500_000),
      `{"to":"+447911123456","from":"Acme","message":"${'\u00e9'.repeat(1_000_000)}"}`,
      `{"from":"Acme","messages":[${Array(10_001).fill('{"to":"+447911123456","message":"x"}').join(',')}]}`,
      'x'.repeat(6 * 1024 * 1024),
    ];
    for (const payload of big) {
      for (const url of ['/v1/sms/send', '/v1/sms/bulk']) {
        const c: HostileCase = { method: 'POST', url, headers: { authorization: `Bearer ${creds.key}`, 'content-type': 'application/json' }, payload, html: false, mustFail: true };
        const res = await send(c);
        assert.equal(judge(c, res.statusCode, res.headers['content-type'] as string | undefined, res.body), null, `${url}: ${res.statusCode} ${res.body.slice(0, 200)}`);
      }
    }
  });

  test('a malformed multipart body on a dashboard form is a 4xx', async () => {
    const c: HostileCase = {
      method: 'POST',
      url: '/dashboard/sender-ids',
      headers: { cookie: creds.owner!.cookie, 'content-type': 'multipart/form-data; boundary=zzz' },
      payload: Buffer.from([0x62, 0xdb]),
      html: true,
      mustFail: true,
    };
    const res = await send(c);
    assert.equal(judge(c, res.statusCode, res.headers['content-type'] as string | undefined, res.body), null);
  });

  test('a query key given twice on a dashboard page is a 4xx or a page', async () => {
    const c: HostileCase = { method: 'GET', url: '/dashboard/messages?batch_id=&batch_id=201', headers: { cookie: creds.owner!.cookie }, html: true, mustFail: false };
    const res = await send(c);
    assert.equal(judge(c, res.statusCode, res.headers['content-type'] as string | undefined, res.body), null);
  });

  test('the login and sign-up forms take hostile e-mails and passwords without a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('/dashboard/login', '/dashboard/signup', '/operator/login'), hostileString, hostileString, async (url, email, password) => {
        const client = new DashboardClient(h.app);
        const page = await client.get(url);
        tried++;
        const res = await client.post(url, { name: email, email, password }, page.body);
        assert.ok(res.statusCode < 500, `${url} ${JSON.stringify({ email, password }).slice(0, 300)}: ${res.statusCode} ${res.body.slice(0, 300)}`);
      }),
      { seed: SEED, numRuns: 6, endOnFailure: true },
    );
  });
});
