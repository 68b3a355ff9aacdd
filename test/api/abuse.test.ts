/**
 * Abuse: key guessing (per-IP limit on failed authentications, uniform answers whatever part of a
 * key is right), body and bulk size limits, and the slow-loris deadline of the HTTP server.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { harness, type Harness } from '../helpers/harness.ts';
import { DashboardClient } from '../helpers/dashboard-client.ts';
import { createOperator } from '../../src/services/auth/operators.ts';
import { revokeApiKey } from '../../src/services/keys/api-keys.ts';

const SEND = { to: '+447911123456', from: 'Acme', message: 'hi' };

describe('failed authentications per client IP', () => {
  let h: Harness;
  before(async () => {
    h = await harness({ AUTH_FAILURE_LIMIT: '3', AUTH_FAILURE_WINDOW_MS: '60000' });
  });
  after(() => h.close());

  const from = (ip: string, authorization?: string) =>
    h.app.inject({ method: 'GET', url: '/v1/account', remoteAddress: ip, headers: authorization === undefined ? {} : { authorization } });

  test('after the limit of 401s, failing requests from that IP get 429 with Retry-After until the window ends; a good key still gets through', async () => {
    await h.customer(); // the clock's window starts on a minute boundary; move into a fresh one
    h.clock.advance(60_000 - (h.clock.ms % 60_000));
    const { key } = await h.customer();
    assert.equal((await from('127.0.0.21', `Bearer ${key}`)).statusCode, 200, 'a good key is not counted');
    for (const header of [undefined, 'Bearer nope', `Bearer pk_live_${'x'.repeat(32)}`]) {
      const res = await from('127.0.0.21', header);
      assert.equal(res.statusCode, 401);
      assert.equal(res.json().code, 'invalid_api_key');
    }
    const refused = await from('127.0.0.21', `Bearer pk_live_${'y'.repeat(32)}`);
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.json().code, 'rate_limit_exceeded');
    assert.equal(refused.json().status, 'error');
    assert.equal(Number(refused.headers['retry-after']), 60);
    // A good key from the same address (a NAT, a load balancer) is not refused for the others' failures.
    assert.equal((await from('127.0.0.21', `Bearer ${key}`)).statusCode, 200);
    // Other clients are not affected.
    assert.equal((await from('127.0.0.22', 'Bearer nope')).statusCode, 401);
    h.clock.advance(30_000);
    assert.equal(Number((await from('127.0.0.21')).headers['retry-after']), 30);
    h.clock.advance(30_000);
    assert.equal((await from('127.0.0.21', 'Bearer nope')).statusCode, 401, 'the window ended');
  });

  test('a revoked key counts as a failure; a suspended account or a missing scope does not', async () => {
    h.clock.advance(60_000 - (h.clock.ms % 60_000));
    const ok = await h.customer({ scopes: 'sms:send' });
    for (let i = 0; i < 5; i++) assert.equal((await from('127.0.0.23', `Bearer ${ok.key}`)).statusCode, 403, 'missing scope');
    assert.equal((await from('127.0.0.23', `Bearer ${ok.key}`)).json().code, 'insufficient_permissions');
    const revoked = await h.customer();
    await revokeApiKey(h.ctx, revoked.keyId);
    for (let i = 0; i < 3; i++) assert.equal((await from('127.0.0.23', `Bearer ${revoked.key}`)).json().code, 'api_key_revoked');
    assert.equal((await from('127.0.0.23', `Bearer ${revoked.key}`)).statusCode, 429);
    assert.equal((await from('127.0.0.23', `Bearer ${ok.key}`)).json().code, 'insufficient_permissions', 'the good key is judged as before');
  });
});

describe('failed authentications behind a trusted proxy (TRUST_PROXY)', () => {
  let h: Harness;
  before(async () => {
    h = await harness({ AUTH_FAILURE_LIMIT: '2', TRUST_PROXY: '127.0.9.0/24' });
  });
  after(() => h.close());

  test('the client named by the proxy is counted, not the proxy; an untrusted peer cannot pick its address', async () => {
    const { key } = await h.customer();
    const via = (peer: string, client: string, authorization: string) =>
      h.app.inject({ method: 'GET', url: '/v1/account', remoteAddress: peer, headers: { authorization, 'x-forwarded-for': client } });
    for (let i = 0; i < 2; i++) assert.equal((await via('127.0.9.1', '127.0.0.7', 'Bearer nope')).statusCode, 401);
    assert.equal((await via('127.0.9.1', '127.0.0.7', 'Bearer nope')).statusCode, 429);
    assert.equal((await via('127.0.9.1', '127.0.0.7', `Bearer ${key}`)).statusCode, 200, 'a good key behind the same client address');
    assert.equal((await via('127.0.9.1', '127.0.0.8', 'Bearer nope')).statusCode, 401, 'another client behind the same proxy');
    // Not a trusted proxy: its X-Forwarded-For is ignored, so rotating it does not escape the limit.
    for (let i = 0; i < 2; i++) assert.equal((await via('127.0.0.5', `127.0.0.${100 + i}`, 'Bearer nope')).statusCode, 401);
    assert.equal((await via('127.0.0.5', '127.0.0.199', 'Bearer nope')).statusCode, 429);
  });
});

describe('uniform answers and size limits', () => {
  let h: Harness;
  before(async () => {
    h = await harness({ BODY_LIMIT_BYTES: '2048', BULK_MAX_MESSAGES: '5' });
  });
  after(() => h.close());

  test('an unknown key with a real prefix, a garbage key and no key get byte-identical answers', async () => {
    const { key } = await h.customer();
    const realPrefix = `${key.slice(0, 12)}${'Z'.repeat(20)}`;
    const realButOneChar = `${key.slice(0, -1)}${key.endsWith('a') ? 'b' : 'a'}`;
    const answers = [];
    for (const header of [`Bearer ${realPrefix}`, `Bearer ${realButOneChar}`, `Bearer pk_live_${'0'.repeat(32)}`, 'Bearer garbage', undefined]) {
      const res = await h.request('POST', '/v1/sms/send', { body: SEND, headers: header === undefined ? {} : { authorization: header } });
      answers.push({ status: res.statusCode, body: res.body, type: res.headers['content-type'], retry: res.headers['retry-after'] });
    }
    for (const a of answers) assert.deepEqual(a, answers[0]);
    assert.equal(answers[0]!.status, 401);
    assert.equal(JSON.parse(answers[0]!.body).code, 'invalid_api_key');
  });

  test('a body over BODY_LIMIT_BYTES is 413 payload_too_large, checked before it is parsed', async () => {
    const { key } = await h.customer();
    const res = await h.request('POST', '/v1/sms/send', { key, body: { ...SEND, message: 'x'.repeat(4000) } });
    assert.equal(res.statusCode, 413);
    assert.equal(res.json().code, 'payload_too_large');
    const declared = await h.app.inject({
      method: 'POST',
      url: '/v1/sms/send',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': '999999999' },
      payload: '{}',
    });
    assert.ok([400, 413].includes(declared.statusCode), String(declared.statusCode));
    assert.ok(declared.json().code);
  });

  test('more than BULK_MAX_MESSAGES entries is too_many_messages, and nothing is debited', async () => {
    const { key } = await h.customer({ credits: 100 });
    const messages = Array.from({ length: 6 }, () => ({ to: '+447911123456', message: 'hi' }));
    const res = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', messages } });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, 'too_many_messages');
    assert.equal((await h.request('GET', '/v1/account', { key })).json().data.credits_remaining, 100);
  });
});

describe('slow clients', () => {
  let h: Harness;
  let port: number;
  before(async () => {
    h = await harness({ REQUEST_TIMEOUT_MS: '500' });
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    port = (h.app.server.address() as AddressInfo).port;
  });
  after(() => h.close());

  test('a client trickling its headers one byte at a time is cut off (REQUEST_TIMEOUT_MS)', async () => {
    const socket = connect(port, '127.0.0.1');
    let closed = false;
    let received = '';
    socket.on('data', (c: Buffer) => (received += c.toString()));
    socket.on('error', () => {});
    const done = new Promise<void>((resolve) => socket.on('close', () => ((closed = true), resolve())));
    // 200 bytes at 25 ms each would take 5 s: ten times the deadline.
    const request = `GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ${'a'.repeat(160)}\r\n\r\n`;
    let sentBytes = 0;
    for (const byte of request) {
      if (closed) break;
      socket.write(byte);
      sentBytes++;
      await sleep(25);
    }
    await done;
    assert.ok(sentBytes < request.length, 'the server waited for the whole trickle');
    assert.match(received, /^HTTP\/1\.1 408 /, 'the trickled request was not served');
    assert.equal(JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4)).code, 'request_timeout');
    // A normal client is still served.
    const res = await fetch(`http://127.0.0.1:${port}/health`);
    assert.equal(res.status, 200);
  });
});

describe('requests the HTTP parser refuses', () => {
  let h: Harness;
  let port: number;
  before(async () => {
    h = await harness();
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    port = (h.app.server.address() as AddressInfo).port;
  });
  after(() => h.close());

  async function raw(bytes: string): Promise<{ status: number; body: { code?: string } }> {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (c: Buffer) => (received += c.toString()));
    socket.on('error', () => {});
    socket.end(bytes);
    await new Promise((resolve) => socket.on('close', resolve));
    return { status: Number(received.slice(9, 12)), body: JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4)) };
  }

  test('overlong headers are 431 headers_too_large; dot-dot paths 404; garbage instead of HTTP is 400 invalid_request; all JSON', async () => {
    assert.deepEqual(await raw(`GET /v1/account HTTP/1.1\r\nHost: x\r\nX-Long: ${'a'.repeat(20_000)}\r\n\r\n`), {
      status: 431,
      body: { status: 'error', code: 'headers_too_large', message: 'The request headers are too large.', docs_url: 'https://pigeon.test/docs/errors#headers_too_large' },
    });
    // Sent as is (fetch and inject would normalise the dots away): static files stay inside their folder.
    for (const path of ['/docs/static/%2e%2e/%2e%2e/package.json', '/docs/static/%2e%2e/x', '/dashboard/assets/%2e%2e/%2e%2e/package.json']) {
      const res = await raw(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      assert.equal(res.status, 404, path);
      assert.equal(res.body.code, 'not_found', path);
    }
    const garbage = await raw('\x00\x01\x02 NOT HTTP\r\n\r\n');
    assert.equal(garbage.status, 400);
    assert.equal(garbage.body.code, 'invalid_request');
  });
});

describe('operator login lockout', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  test('repeated wrong passwords lock that e-mail out from that address, with Retry-After', async () => {
    await createOperator(h.ctx, 'ops@example.com', 'operator password');
    const client = new DashboardClient(h.app);
    const form = await client.get('/operator/login');
    for (let i = 0; i < 5; i++) {
      assert.equal((await client.post('/operator/login', { email: 'ops@example.com', password: `wrong ${i} password` }, form.body)).statusCode, 401);
    }
    const locked = await client.post('/operator/login', { email: 'ops@example.com', password: 'operator password' }, form.body);
    assert.equal(locked.statusCode, 429, 'the right password does not get through a lockout');
    assert.ok(Number(locked.headers['retry-after']) > 0);
    assert.doesNotMatch(locked.body, /operator password/);
  });
});
