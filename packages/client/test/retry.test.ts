/**
 * The retry policy against a real server: 429 with a low rate limit, and a connection dropped
 * after the server committed a send. The server's clock is the harness's test clock, so the
 * client's `sleep` moves it instead of waiting.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Pigeon, PigeonConnectionError, PigeonRateLimitError } from '../src/index.ts';
import { droppingProxy, liveServer, type LiveServer } from './server.ts';

describe('retry on 429', () => {
  let server: LiveServer;
  before(async () => {
    server = await liveServer({ RATE_LIMIT_MAX: '2', RATE_LIMIT_WINDOW_MS: '1000' });
  });
  after(() => server.close());

  test('waits at least Retry-After, then succeeds; a send retried this way sends once', async () => {
    const { key } = await server.h.customer({ credits: 10 });
    const waits: number[] = [];
    let requests = 0;
    const pigeon = new Pigeon({
      apiKey: key,
      baseUrl: server.baseUrl,
      sleep: async (ms) => {
        waits.push(ms);
        server.h.clock.advance(ms);
      },
      fetch: (input, init) => (requests++, fetch(input, init)),
    });
    await pigeon.account.get();
    await pigeon.account.get();
    // The window's two requests are used: this one is refused with 429, waits, and goes through.
    const sent = await pigeon.sms.send({ to: '+447911123456', from: 'Acme', message: 'after the wait' });
    assert.equal(requests, 4);
    assert.equal(waits.length, 1);
    assert.ok(waits[0]! >= 1000, `waited ${waits[0]} ms, Retry-After was 1 s`);
    assert.equal(sent.credits_remaining, 9);
    const reports = await pigeon.deliveryReports.list();
    assert.equal(reports.pagination.total, 1);
  });

  test('backoff grows exponentially when the window stays full', async () => {
    const { key } = await server.h.customer();
    const waits: number[] = [];
    const pigeon = new Pigeon({
      apiKey: key,
      baseUrl: server.baseUrl,
      retryBaseDelayMs: 2000,
      maxRetries: 3,
      random: () => 0.999,
      // The clock does not move: every retry meets a full window.
      sleep: async (ms) => void waits.push(ms),
    });
    await pigeon.account.get();
    await pigeon.account.get();
    const err = await pigeon.account.get().catch((e: unknown) => e);
    assert.ok(err instanceof PigeonRateLimitError);
    assert.equal(err.code, 'rate_limit_exceeded');
    assert.equal(err.status, 429);
    assert.equal(err.retryAfter, 1);
    assert.equal(err.headers.get('ratelimit-limit'), '2');
    assert.equal(waits.length, 3);
    assert.ok(waits[0]! < waits[1]! && waits[1]! < waits[2]!, `growing waits: ${waits}`);
    assert.ok(waits[2]! > 7000 && waits[2]! <= 8000, `third wait near 2 s * 2^2: ${waits[2]}`);
    server.h.clock.advance(1000);
  });

  test('maxRetries: 0 gives up at once', async () => {
    const { key } = await server.h.customer();
    const pigeon = new Pigeon({ apiKey: key, baseUrl: server.baseUrl, maxRetries: 0 });
    await pigeon.account.get();
    await pigeon.account.get();
    await assert.rejects(pigeon.account.get(), PigeonRateLimitError);
    server.h.clock.advance(1000);
  });
});

describe('retry after a dropped connection', () => {
  let server: LiveServer;
  before(async () => {
    server = await liveServer();
  });
  after(() => server.close());

  test('a send whose answer was lost is retried with the same Idempotency-Key: one message, one debit', async () => {
    const { key, accountId } = await server.h.customer({ credits: 10 });
    const proxy = await droppingProxy(server.baseUrl);
    try {
      const waits: number[] = [];
      const pigeon = new Pigeon({ apiKey: key, baseUrl: proxy.baseUrl, sleep: async (ms) => void waits.push(ms) });
      const sent = await pigeon.sms.send({ to: '+447911123456', from: 'Acme', message: 'exactly once' });

      assert.equal(proxy.requests.length, 2, 'the first connection was dropped, the retry went through');
      const keys = proxy.requests.map((head) => /^idempotency-key: (.+)\r$/im.exec(head)?.[1]);
      assert.ok(keys[0], 'the client sent an Idempotency-Key');
      assert.equal(keys[1], keys[0], 'the retry reused it');
      assert.equal(waits.length, 1);

      const direct = new Pigeon({ apiKey: key, baseUrl: server.baseUrl });
      const reports = await direct.deliveryReports.list();
      assert.equal(reports.pagination.total, 1, 'one message');
      assert.equal(reports.data[0]?.message_id, sent.message_id);
      assert.equal((await direct.account.get()).data.credits_remaining, 9);
      const debits = await server.h.ctx.store.db
        .selectFrom('credit_ledger')
        .selectAll()
        .where('account_id', '=', accountId)
        .where('kind', '=', 'debit')
        .execute();
      assert.equal(debits.length, 1, 'one debit');
      assert.equal(Number(debits[0]?.amount), -1);
    } finally {
      await proxy.close();
    }
  });

  test('a bulk whose answer was lost is retried safely too', async () => {
    const { key } = await server.h.customer({ credits: 10 });
    const proxy = await droppingProxy(server.baseUrl);
    try {
      const pigeon = new Pigeon({ apiKey: key, baseUrl: proxy.baseUrl, sleep: async () => {} });
      const result = await pigeon.sms.bulk({ from: 'Acme', messages: [{ to: '+447911123456', message: 'a' }, { to: '+254712345678', message: 'b' }] });
      assert.equal(proxy.requests.length, 2);
      assert.equal(result.credits_remaining, 8);
      const direct = new Pigeon({ apiKey: key, baseUrl: server.baseUrl });
      assert.equal((await direct.deliveryReports.list()).pagination.total, 2);
      assert.equal((await direct.account.get()).data.credits_remaining, 8);
    } finally {
      await proxy.close();
    }
  });

  test('a call that is not safe to repeat is not retried after a dropped connection', async () => {
    const { key } = await server.h.customer({ sender: null });
    const proxy = await droppingProxy(server.baseUrl);
    try {
      const pigeon = new Pigeon({ apiKey: key, baseUrl: proxy.baseUrl, sleep: async () => {} });
      await assert.rejects(pigeon.senderIds.create('Brand2'), PigeonConnectionError);
      assert.equal(proxy.requests.length, 1);
    } finally {
      await proxy.close();
    }
  });
});
