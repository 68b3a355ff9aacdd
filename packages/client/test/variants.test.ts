/**
 * Answers the spec allows but Pigeon itself never gives (the guide's `sender_ids` / `sender_id`
 * shape, records without `id`, the send reference's `unauthorized` code) come from a tiny local
 * HTTP server here, since the real one cannot be made to produce them.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pigeon, PigeonAuthenticationError, PigeonServerError } from '../src/index.ts';

describe('tolerated variant answers', () => {
  let server: http.Server;
  let baseUrl: string;
  let hits = 0;
  before(async () => {
    server = http.createServer((req, res) => {
      hits++;
      const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (req.url === '/v1/sms/sender-ids' && req.method === 'GET') {
        return json(200, { status: 'success', sender_ids: [{ name: 'Acme', status: 'approved', created_at: '2026-03-01T12:00:00Z' }] });
      }
      if (req.url === '/v1/sms/sender-ids' && req.method === 'POST') {
        return json(201, { status: 'success', sender_id: { name: 'Brand', status: 'pending', created_at: '2026-03-01T12:00:00Z' } });
      }
      if (req.url === '/v1/sms/send') return json(401, { status: 'error', code: 'unauthorized', message: 'Unauthorized', docs_url: 'https://x/docs' });
      return res.writeHead(502, { 'content-type': 'text/html' }).end('<html>bad gateway</html>');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const pigeon = () => new Pigeon({ apiKey: 'pk_live_test', baseUrl, sleep: async () => {} });

  test('sender_ids / sender_id keys and records without id', async () => {
    assert.deepEqual(await pigeon().senderIds.list(), { status: 'success', data: [{ name: 'Acme', status: 'approved', created_at: '2026-03-01T12:00:00Z' }] });
    const created = await pigeon().senderIds.create('Brand');
    assert.deepEqual(created, { status: 'success', data: { name: 'Brand', status: 'pending', created_at: '2026-03-01T12:00:00Z' } });
  });

  test('a 401 with the code unauthorized is an authentication error', async () => {
    const err = await pigeon().sms.send({ to: '+447911123456', from: 'Acme', message: 'x' }).catch((e: unknown) => e);
    assert.ok(err instanceof PigeonAuthenticationError);
    assert.equal(err.code, 'unauthorized');
    assert.equal(err.status, 401);
  });

  test('a non-JSON 5xx is retried for a GET, then a PigeonServerError', async () => {
    hits = 0;
    const err = await pigeon().account.get().catch((e: unknown) => e);
    assert.ok(err instanceof PigeonServerError);
    assert.equal(err.status, 502);
    assert.equal(err.code, 'http_502');
    assert.equal(hits, 4, 'the first attempt and 3 retries');
  });
});
