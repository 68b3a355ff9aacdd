/**
 * `/metrics` without METRICS_TOKEN (DECISIONS.md §9): served to a client on this host only. A
 * request that a proxy forwards is not such a client, even when the proxy runs on loopback: the
 * client it speaks for may be anywhere. (No address other than loopback is used here: a peer that
 * is not loopback is given as text that is no address at all, which must be refused the same.)
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';

describe('/metrics without METRICS_TOKEN', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  const scrape = (remoteAddress: string, headers: Record<string, string> = {}) => h.app.inject({ method: 'GET', url: '/metrics', remoteAddress, headers });

  test('a loopback client is served, in each way a loopback peer is written', async () => {
    for (const peer of ['127.0.0.1', '127.0.0.53', '::1', '::ffff:127.0.0.1']) {
      const res = await scrape(peer);
      assert.equal(res.statusCode, 200, peer);
      assert.match(res.body, /http_requests_total|# HELP/, peer);
    }
  });

  test('a peer that is not loopback is 403 insufficient_permissions', async () => {
    const res = await scrape('not-an-address');
    assert.equal(res.statusCode, 403);
    assert.equal(res.json().code, 'insufficient_permissions');
    assert.equal(res.json().docs_url, 'https://pigeon.test/docs/errors#insufficient_permissions');
  });

  test('a request forwarded by a proxy on loopback is not a loopback client', async () => {
    for (const header of ['x-forwarded-for', 'forwarded', 'x-real-ip']) {
      const res = await scrape('127.0.0.1', { [header]: header === 'forwarded' ? 'for=127.0.0.1' : '127.0.0.1' });
      assert.equal(res.statusCode, 403, header);
      assert.equal(res.json().code, 'insufficient_permissions', header);
    }
  });
});

describe('/metrics without METRICS_TOKEN behind a trusted proxy on loopback (TRUST_PROXY)', () => {
  let h: Harness;
  before(async () => {
    h = await harness({ TRUST_PROXY: '127.0.0.1' });
  });
  after(() => h.close());

  test('what the trusted proxy forwards is refused, even without a forwarding header; another loopback peer is served', async () => {
    assert.equal((await h.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' })).statusCode, 403);
    const named = await h.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': '127.0.0.1' } });
    assert.equal(named.statusCode, 403);
    assert.equal((await h.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.2' })).statusCode, 200);
  });
});

describe('/metrics with METRICS_TOKEN', () => {
  let h: Harness;
  before(async () => {
    h = await harness({ METRICS_TOKEN: 's3cret' });
  });
  after(() => h.close());

  test('the token decides, wherever the client is', async () => {
    assert.equal((await h.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' })).statusCode, 401);
    const ok = await h.app.inject({ method: 'GET', url: '/metrics', remoteAddress: 'not-an-address', headers: { authorization: 'Bearer s3cret' } });
    assert.equal(ok.statusCode, 200);
  });
});
