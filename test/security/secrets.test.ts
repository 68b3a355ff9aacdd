/**
 * Secrets stay secret: a real `pigeon serve` at LOG_LEVEL=trace goes through a full flow (sends,
 * bulk, idempotency, Sender IDs, reports, bad keys, the key in places it does not belong, owner
 * sign-up and login, password change, operator login and a wrong password, webhooks signed and
 * delivered to a real HTTPS receiver on 127.0.0.1, one refused and retried), and then neither its
 * log output nor any row of any table holds an API key, a password or the webhook signing secret
 * in clear.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Store } from '../../src/store/connect.ts';
import { createAccount } from '../../src/services/accounts/accounts.ts';
import { createApiKey } from '../../src/services/keys/api-keys.ts';
import { createOperator } from '../../src/services/auth/operators.ts';
import { approveSenderId, registerSenderId } from '../../src/services/sender-ids/sender-ids.ts';
import { verifyWebhookSignature } from '../../src/domain/webhook-signature.ts';
import { freePort, startPigeon, type PigeonProcess } from '../helpers/processes.ts';
import { processDatabase, serviceContext, testDialect, waitForEmptyQueues } from '../helpers/test-store.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { makeTestCa, startReceiver, type Receiver, type TestCa } from '../api/webhooks-receiver.ts';

const OPERATOR_PASSWORD = 'operator-Secret-4f9c1e';
const OWNER_PASSWORD = 'owner-Secret-8d2b7a';
const OWNER_NEW_PASSWORD = 'owner-Secret-NEW-31c0';

/** A browser stand-in over a real port: keeps cookies, finds the CSRF field. */
class Browser {
  cookies = new Map<string, string>();
  constructor(private readonly base: string) {}

  async request(method: string, path: string, form?: Record<string, string>) {
    const res = await fetch(this.base + path, {
      method,
      redirect: 'manual',
      headers: {
        cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      ...(form ? { body: new URLSearchParams(form).toString() } : {}),
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    return { status: res.status, body: await res.text() };
  }

  /** GETs the form page, then posts the form with its CSRF token. */
  async submit(page: string, action: string, form: Record<string, string>) {
    const html = (await this.request('GET', page)).body;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(html)?.[1];
    assert.ok(csrf, `no CSRF field on ${page}`);
    return this.request('POST', action, { _csrf: csrf, ...form });
  }
}

describe(`secrets in logs, errors and the database (${testDialect})`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-secrets-'));
  const database = processDatabase('secrets', dir);
  const databaseUrl = database.url;
  let server: PigeonProcess | null = null;
  let store: Store;
  let ca: TestCa;
  let receiver: Receiver;

  before(async () => {
    store = await database.open();
    ca = makeTestCa();
    // /hook answers 200; /flaky refuses its first attempt (500), so a failed attempt is logged too.
    receiver = await startReceiver(ca, (path, seen) => ({ status: path === '/flaky' && seen === 0 ? 500 : 200 }));
  });

  after(async () => {
    await server?.kill();
    await receiver?.close();
    ca?.cleanup();
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a full flow at trace level leaves no key, password or webhook secret in the logs or the tables', { timeout: 120_000 }, async () => {
    const ctx = serviceContext(store, { DATABASE_URL: databaseUrl });
    const account = await createAccount(ctx, { name: 'Secretive', email: 'secret@example.com', credits: 1000 });
    const { key } = await createApiKey(ctx, account.id, { label: 'secrets' });
    const sender = await registerSenderId(ctx, account.id, 'Acme');
    await approveSenderId(ctx, sender.id);
    await createOperator(ctx, 'ops@example.com', OPERATOR_PASSWORD);
    const webhookSecret = (await store.db.selectFrom('accounts').select('webhook_secret').where('id', '=', account.id).executeTakeFirstOrThrow()).webhook_secret;

    const port = await freePort();
    // The receiver's test CA is trusted the way an operator trusts one, and loopback is allowed.
    server = await startPigeon(['serve'], {
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      LOG_LEVEL: 'trace',
      SIM_DELIVERY_DELAY_MS: '50',
      NODE_EXTRA_CA_CERTS: ca.caFile,
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_RETRY_DELAYS_MS: '0,50',
    });
    const base = `http://127.0.0.1:${port}`;
    const api = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
      const res = await fetch(base + path, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      });
      return { status: res.status, text: await res.text() };
    };
    const answers: string[] = [];
    const call = async (...args: Parameters<typeof api>) => {
      const res = await api(...args);
      answers.push(res.text);
      return res;
    };

    // The API, with callbacks, idempotency and errors.
    assert.equal((await call('POST', '/v1/sms/send', { to: '+447911123456', from: 'Acme', message: 'Hello there', callback_url: receiver.url('/hook') })).status, 200);
    assert.equal((await call('POST', '/v1/sms/send', { to: '+447911121111', from: 'Acme', message: 'Flaky', callback_url: receiver.url('/flaky') })).status, 200);
    assert.equal((await call('POST', '/v1/sms/send', { to: '+447911123456', from: 'Acme', message: 'Once' }, { 'idempotency-key': 'secret-flow-1' })).status, 200);
    assert.equal((await call('POST', '/v1/sms/send', { to: '+447911123456', from: 'Acme', message: 'Once' }, { 'idempotency-key': 'secret-flow-1' })).status, 200);
    assert.equal((await call('POST', '/v1/sms/bulk', { from: 'Acme', messages: [{ to: '+447911123456', message: 'A' }, { to: '+15005550006', message: 'B' }] })).status, 200);
    await call('POST', '/v1/sms/sender-ids', { name: 'Other' });
    await call('GET', '/v1/sms/sender-ids');
    await call('GET', '/v1/sms/delivery-reports');
    await call('GET', '/v1/webhooks/events');
    await call('GET', '/v1/account');
    // The key where it does not belong: in a body, a query, another header, a wrong scheme.
    assert.equal((await call('POST', '/v1/sms/send', { to: key, from: key, message: key })).status, 400);
    await call('POST', '/v1/sms/send', `{"to": "${key}"`);
    await call('GET', `/v1/account?api_key=${key}`);
    await call('GET', `/v1/${key}`);
    assert.equal((await call('GET', '/v1/account', undefined, { authorization: `Basic ${key}` })).status, 401);
    assert.equal((await call('GET', '/v1/account', undefined, { authorization: `Bearer ${key}x` })).status, 401);
    await call('GET', '/metrics', undefined, { authorization: `Bearer ${key}` });

    // The dashboard: owner sign-up, login, wrong password, password change; operator login.
    const owner = new Browser(base);
    assert.equal((await owner.submit('/dashboard/signup', '/dashboard/signup', { name: 'Owner', email: 'owner@example.com', password: OWNER_PASSWORD })).status, 303);
    const change = await owner.submit('/dashboard/settings/password', '/dashboard/settings/password', { current: OWNER_PASSWORD, next: OWNER_NEW_PASSWORD });
    assert.equal(change.status, 200);
    answers.push(change.body);
    const wrongOwner = await new Browser(base).submit('/dashboard/login', '/dashboard/login', { email: 'owner@example.com', password: OWNER_PASSWORD });
    assert.equal(wrongOwner.status, 401);
    answers.push(wrongOwner.body);
    const operator = new Browser(base);
    const wrongOperator = await operator.submit('/operator/login', '/operator/login', { email: 'ops@example.com', password: `${OPERATOR_PASSWORD}!` });
    answers.push(wrongOperator.body);
    assert.equal((await operator.submit('/operator/login', '/operator/login', { email: 'ops@example.com', password: OPERATOR_PASSWORD })).status, 303);
    answers.push((await operator.request('GET', '/operator/accounts')).body);

    // The webhooks arrive, each signed with the account's secret: sms.sent and sms.delivered on
    // /hook; sms.sent on /flaky (its number gets no receipt), refused once and then taken.
    const deliveries = await waitFor(
      () => {
        const hook = receiver.received.filter((r) => r.path === '/hook');
        const flaky = receiver.received.filter((r) => r.path === '/flaky');
        return hook.length >= 2 && flaky.length >= 2 && [...hook, ...flaky];
      },
      { timeout: 30_000, message: () => `the webhooks (received ${receiver.received.map((r) => r.path).join(', ') || 'none'})` },
    );
    assert.deepEqual(deliveries.map((r) => JSON.parse(r.body).event).sort(), ['sms.delivered', 'sms.sent', 'sms.sent', 'sms.sent']);
    for (const r of deliveries) {
      const header = String(r.headers['x-pigeon-signature']);
      assert.ok(verifyWebhookSignature(r.body, header, webhookSecret, { nowSeconds: Math.floor(Date.now() / 1000) }), `a valid signature: ${header}`);
      assert.ok(!JSON.stringify(r.headers).includes(webhookSecret), 'the secret itself is not sent');
    }
    // Let the workers finish dispatching and receiving, then stop.
    await waitForEmptyQueues(store, 30_000, () => server!.output().slice(-2000));
    assert.equal(await server.stop(), 0, server.output().slice(-3000));
    const log = server.output();
    server = null;
    assert.match(log, /"msg":"pigeon stopped"/, 'the whole run was logged');
    assert.match(log, /webhook attempt failed: HTTP 500/, 'the refused attempt was logged');

    const secrets = { key, 'key body': key.slice(8), OPERATOR_PASSWORD, OWNER_PASSWORD, OWNER_NEW_PASSWORD, webhookSecret };
    for (const [name, secret] of Object.entries(secrets)) assert.ok(!log.includes(secret), `the log holds the ${name}`);
    for (const answer of answers) {
      for (const [name, secret] of Object.entries(secrets)) {
        if (name !== 'key' && name !== 'key body') assert.ok(!answer.includes(secret), `an answer holds the ${name}`);
      }
    }
    // Error answers never echo the key back (it was sent in a body field and a path above).
    for (const answer of answers.filter((a) => a.includes('"status":"error"'))) assert.ok(!answer.includes(key.slice(8)), `an error echoes the key: ${answer.slice(0, 300)}`);

    // No table holds any of them in clear.
    const tables = await store.db.introspection.getTables();
    assert.ok(tables.length > 5);
    for (const table of tables) {
      const rows = await store.db.selectFrom(table.name as never).selectAll().execute();
      const dump = JSON.stringify(rows);
      for (const [name, secret] of Object.entries(secrets)) {
        // The webhook secret is needed in clear to sign; it lives in accounts and nowhere else.
        if (name === 'webhookSecret' && table.name === 'accounts') continue;
        assert.ok(!dump.includes(secret), `${table.name} holds the ${name}`);
      }
    }
  });
});
