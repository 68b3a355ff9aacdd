import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';
import { revokeApiKey } from '../../src/services/keys/api-keys.ts';
import { setAccountStatus } from '../../src/services/accounts/accounts.ts';

const endpoints: ['GET' | 'POST', string, unknown][] = [
  ['POST', '/v1/sms/send', { to: '+447911123456', from: 'Acme', message: 'hi' }],
  ['POST', '/v1/sms/bulk', { from: 'Acme', messages: [{ to: '+447911123456', message: 'hi' }] }],
  ['GET', '/v1/sms/sender-ids', undefined],
  ['POST', '/v1/sms/sender-ids', { name: 'Other' }],
  ['GET', '/v1/sms/delivery-reports', undefined],
  ['GET', '/v1/account', undefined],
];

describe('authentication', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  async function code(method: 'GET' | 'POST', url: string, body: unknown, authorization?: string) {
    const res = await h.app.inject({ method, url, headers: authorization === undefined ? {} : { authorization }, ...(body ? { payload: body as object } : {}) });
    return { status: res.statusCode, code: res.json().code as string };
  }

  test('every /v1 endpoint needs a key: missing, malformed or unknown is 401 invalid_api_key', async () => {
    const { key } = await h.customer();
    const wrong = `${key.slice(0, -1)}${key.endsWith('a') ? 'b' : 'a'}`;
    for (const [method, url, body] of endpoints) {
      for (const header of [undefined, '', 'Bearer', 'Bearer ', `Basic ${key}`, key, `Bearer ${wrong}`, 'Bearer pk_live_short', `Token ${key}`]) {
        assert.deepEqual(await code(method, url, body, header), { status: 401, code: 'invalid_api_key' }, `${method} ${url} with ${JSON.stringify(header)}`);
      }
    }
  });

  test('the key is never trimmed: extra whitespace or a stray character is invalid_api_key', async () => {
    const { key } = await h.customer();
    for (const header of [`Bearer  ${key}`, `Bearer ${key} `, `Bearer \t${key}`, `Bearer ${key}x`, `Bearer x${key}`, `Bearer ${key}\u200b`]) {
      assert.deepEqual(await code('GET', '/v1/account', undefined, header), { status: 401, code: 'invalid_api_key' }, JSON.stringify(header));
    }
    assert.equal((await code('GET', '/v1/account', undefined, `bearer ${key}`)).status, 200, 'the scheme is case-insensitive');
    assert.equal((await code('GET', '/v1/account', undefined, `BEARER ${key}`)).status, 200);
  });

  test('a revoked key is refused at once with api_key_revoked, on every endpoint', async () => {
    const { key, keyId } = await h.customer();
    assert.equal((await code('GET', '/v1/account', undefined, `Bearer ${key}`)).status, 200);
    await revokeApiKey(h.ctx, keyId);
    for (const [method, url, body] of endpoints) {
      assert.deepEqual(await code(method, url, body, `Bearer ${key}`), { status: 401, code: 'api_key_revoked' }, url);
    }
  });

  test('a suspended account gets 403 account_suspended everywhere, and works again when resumed', async () => {
    const { key, accountId } = await h.customer();
    await setAccountStatus(h.ctx, accountId, 'suspended');
    for (const [method, url, body] of endpoints) {
      assert.deepEqual(await code(method, url, body, `Bearer ${key}`), { status: 403, code: 'account_suspended' }, url);
    }
    await setAccountStatus(h.ctx, accountId, 'active');
    assert.equal((await code('GET', '/v1/account', undefined, `Bearer ${key}`)).status, 200);
  });

  test('a key without the scope gets 403 insufficient_permissions; with it, the call works', async () => {
    const needs: Record<string, string> = {
      'POST /v1/sms/send': 'sms:send',
      'POST /v1/sms/bulk': 'sms:send',
      'GET /v1/sms/sender-ids': 'sender_ids:read',
      'POST /v1/sms/sender-ids': 'sender_ids:write',
      'GET /v1/sms/delivery-reports': 'reports:read',
      'GET /v1/account': 'account:read',
    };
    for (const [method, url, body] of endpoints) {
      const scope = needs[`${method} ${url}`]!;
      const others = ['sms:send', 'sender_ids:read', 'sender_ids:write', 'reports:read', 'account:read'].filter((s) => s !== scope).join(',');
      const without = await h.customer({ scopes: others });
      assert.deepEqual(await code(method, url, body, `Bearer ${without.key}`), { status: 403, code: 'insufficient_permissions' }, url);
      const only = await h.customer({ scopes: scope });
      const res = await code(method, url, body, `Bearer ${only.key}`);
      assert.ok(res.status < 300, `${url} with only ${scope}: ${res.status} ${res.code}`);
    }
  });

  test('access changed behind the process (as by another process) applies to the next send, with nothing charged', async () => {
    const { key, keyId, accountId } = await h.customer({ credits: 50 });
    const db = h.ctx.store.db;
    const auth = `Bearer ${key}`;
    const send = (idempotencyKey?: string) =>
      h.app.inject({
        method: 'POST',
        url: '/v1/sms/send',
        headers: { authorization: auth, ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}) },
        payload: { to: '+447911123456', from: 'Acme', message: 'hi' },
      });
    const bulkOfInvalid = () =>
      h.app.inject({ method: 'POST', url: '/v1/sms/bulk', headers: { authorization: auth }, payload: { from: 'Acme', messages: [{ to: '123', message: 'hi' }] } });
    const stored = async () => Number((await db.selectFrom('messages').select((eb) => eb.fn.countAll().as('n')).where('account_id', '=', accountId).executeTakeFirstOrThrow()).n);
    const balance = async () => Number((await db.selectFrom('accounts').select('credits').where('id', '=', accountId).executeTakeFirstOrThrow()).credits);
    assert.equal((await send('first')).statusCode, 200, 'the key and the Sender ID are now cached');
    const [messages, credits] = [await stored(), await balance()];

    // Plain SQL, as another process would write it: nothing in this process hears of it.
    await db.updateTable('sender_ids').set({ status: 'rejected' }).where('account_id', '=', accountId).execute();
    assert.equal((await send()).json().code, 'invalid_sender_id');
    await db.updateTable('sender_ids').set({ status: 'approved' }).where('account_id', '=', accountId).execute();
    assert.equal((await send()).statusCode, 200, 'approved again: usable at once, although the refusal was cached');

    await db.updateTable('accounts').set({ status: 'suspended' }).where('id', '=', accountId).execute();
    assert.equal((await send()).json().code, 'account_suspended');
    await db.updateTable('accounts').set({ status: 'active' }).where('id', '=', accountId).execute();
    assert.equal((await send()).statusCode, 200);

    await db.updateTable('api_keys').set({ scopes: 'reports:read' }).where('id', '=', keyId).execute();
    assert.equal((await send()).json().code, 'insufficient_permissions');
    await db.updateTable('api_keys').set({ scopes: 'sms:send' }).where('id', '=', keyId).execute();
    assert.equal((await send()).statusCode, 200);

    assert.equal((await send()).statusCode, 200, 'and now cached as valid again');
    await db.updateTable('api_keys').set({ revoked_at: Date.now() }).where('id', '=', keyId).execute();
    const badBody = await h.app.inject({ method: 'POST', url: '/v1/sms/send', headers: { authorization: auth }, payload: { to: 'nope', from: 'Acme', message: 'hi' } });
    assert.equal(badBody.json().code, 'api_key_revoked', 'access answers before the body, as for any other request');
    const noBody = await h.app.inject({ method: 'POST', url: '/v1/sms/send', headers: { authorization: auth }, payload: {} });
    assert.equal(noBody.json().code, 'api_key_revoked', 'also when the body fails the schema');
    assert.equal((await send()).json().code, 'api_key_revoked');
    assert.equal((await send('first')).json().code, 'api_key_revoked', 'an idempotent replay is refused too');
    assert.equal((await bulkOfInvalid()).json().code, 'api_key_revoked', 'so is a bulk with nothing to commit');
    assert.equal(await stored(), messages + 4, 'only the four sends made while access was granted');
    assert.equal(await balance(), credits - 4);
  });

  test('authentication is checked before the body is read', async () => {
    const res = await h.app.inject({ method: 'POST', url: '/v1/sms/send', headers: { 'content-type': 'application/json' }, payload: '{not json' });
    assert.equal(res.statusCode, 401);
    assert.equal(res.json().code, 'invalid_api_key');
  });

  test('keys are stored only as a digest', async () => {
    const { key, keyId } = await h.customer();
    const row = await h.ctx.store.db.selectFrom('api_keys').selectAll().where('id', '=', keyId).executeTakeFirstOrThrow();
    assert.ok(!Object.values(row).some((v) => typeof v === 'string' && v.includes(key.slice(12))), 'no column holds the key');
    assert.equal(row.prefix, key.slice(0, 12));
  });
});

describe('failed authentications from a shared address (AUTH_FAILURE_LIMIT)', () => {
  let h: Harness;
  before(async () => {
    h = await harness({ AUTH_FAILURE_LIMIT: '20', AUTH_FAILURE_WINDOW_MS: '60000' });
  });
  after(() => h.close());

  test('a broken client behind the same NAT cannot lock out a valid key; its own failures are refused with 429', async () => {
    const { key } = await h.customer({ credits: 10 });
    const fresh = await h.customer({ credits: 10 }); // never used before the flood: not in any cache
    const send = (authorization: string) =>
      h.app.inject({
        method: 'POST',
        url: '/v1/sms/send',
        remoteAddress: '127.0.0.44',
        headers: { authorization },
        payload: { to: '+447911123456', from: 'Acme', message: 'hi' },
      });
    const bad = await Promise.all(Array.from({ length: 60 }, (_, i) => send(`Bearer pk_live_${String(i).padStart(32, '0')}`)));
    const statuses = bad.map((r) => r.statusCode);
    assert.equal(statuses.filter((s) => s === 401).length, 20, 'the first 20 failures are answered as themselves');
    assert.equal(statuses.filter((s) => s === 429).length, 40);
    const refused = bad.find((r) => r.statusCode === 429)!;
    assert.equal(refused.json().code, 'rate_limit_exceeded');
    assert.ok(Number(refused.headers['retry-after']) > 0);
    for (const good of [key, fresh.key]) {
      const res = await send(`Bearer ${good}`);
      assert.equal(res.statusCode, 200, res.body);
    }
    assert.equal((await send('Bearer nope')).statusCode, 429, 'still over the limit for failing requests');
  });
});
