import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { harness, type Harness } from '../helpers/harness.ts';
import { catalogue } from '../../src/errors/catalogue.ts';

describe('protocol: unknown routes, methods, errors page, rate limits', () => {
  let h: Harness;
  before(async () => {
    h = await harness({ RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_MS: '1000' });
  });
  after(() => h.close());

  test('unknown routes and versions are 404 not_found in JSON', async () => {
    // /v2 is Twilio Verify's (it answers as Twilio does: credentials first); /v3 is no version.
    for (const url of ['/v3/sms/send', '/v1/sms/nope', '/nothing', '/v1']) {
      const res = await h.request('GET', url);
      assert.equal(res.statusCode, 404, url);
      assert.match(res.headers['content-type'] as string, /application\/json/);
      assert.equal(res.json().code, 'not_found');
      assert.equal(res.json().status, 'error');
      assert.equal(res.json().docs_url, 'https://pigeon.test/docs/errors#not_found');
    }
    const twilio = await h.request('GET', '/v2/sms/send');
    assert.equal(twilio.statusCode, 401);
    assert.equal(twilio.json().code, 20003, 'Twilio\'s "authenticate" before anything else under /v2');
  });

  test('a known path with the wrong method is 405 method_not_allowed with Allow', async () => {
    const res = await h.request('DELETE', '/v1/sms/send');
    assert.equal(res.statusCode, 405);
    assert.equal(res.json().code, 'method_not_allowed');
    assert.equal(res.headers.allow, 'POST');
    const get = await h.request('GET', '/v1/sms/bulk');
    assert.equal(get.statusCode, 405);
    const put = await h.request('PUT', '/v1/sms/sender-ids');
    assert.equal(put.statusCode, 405);
    assert.match(put.headers.allow as string, /GET/);
    assert.match(put.headers.allow as string, /POST/);
  });

  test('/docs/errors lists every catalogued code with an anchor; it is public', async () => {
    const res = await h.request('GET', '/docs/errors');
    assert.equal(res.statusCode, 200);
    assert.match(res.headers['content-type'] as string, /text\/html/);
    for (const code of Object.keys(catalogue)) assert.match(res.body, new RegExp(`id="${code}"`), code);
    assert.equal((await h.request('GET', '/docs')).statusCode, 200);
  });

  test('every error code the source throws is catalogued', () => {
    const codes = new Set<string>();
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir)) {
        const path = join(dir, entry);
        if (statSync(path).isDirectory()) walk(path);
        else if (path.endsWith('.ts') && !path.endsWith('.test.ts')) {
          const text = readFileSync(path, 'utf8');
          for (const m of text.matchAll(/new AppError\(\s*'([a-z_]+)'/g)) codes.add(m[1]!);
          for (const m of text.matchAll(/errorBody\([^,]+,\s*'([a-z_]+)'/g)) codes.add(m[1]!);
        }
      }
    };
    walk('src');
    assert.ok(codes.size > 10);
    for (const code of codes) assert.ok(code in catalogue, `${code} is thrown but not catalogued`);
  });

  test('rate limit per account: 429 rate_limit_exceeded with Retry-After and RateLimit headers', async () => {
    const a = await h.customer();
    const b = await h.customer();
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await h.request('GET', '/v1/account', { key: a.key }));
    assert.deepEqual(answers.map((r) => r.statusCode), [200, 200, 200, 429]);
    assert.equal(answers[0]!.headers['ratelimit-limit'], '3');
    assert.equal(answers[0]!.headers['ratelimit-remaining'], '2');
    assert.ok(Number(answers[0]!.headers['ratelimit-reset']) >= 1);
    const limited = answers[3]!;
    assert.equal(limited.json().code, 'rate_limit_exceeded');
    assert.ok(Number(limited.headers['retry-after']) >= 1);
    assert.equal(limited.headers['ratelimit-remaining'], '0');
    assert.equal((await h.request('GET', '/v1/account', { key: b.key })).statusCode, 200, 'another account is not affected');
    h.clock.advance(1000);
    assert.equal((await h.request('GET', '/v1/account', { key: a.key })).statusCode, 200, 'the next window is open again');
  });

  test('an unexpected failure is a JSON 500 internal_error without internals', async () => {
    const broken = await harness();
    try {
      const { key } = await broken.customer();
      await broken.ctx.store.db.schema.dropTable('batches').execute();
      const res = await broken.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', messages: [{ to: '+447911123456', message: 'x' }] } });
      assert.equal(res.statusCode, 500);
      assert.equal(res.json().code, 'internal_error');
      assert.doesNotMatch(res.body, /batches|sqlite|stack|at /i);
    } finally {
      await broken.close();
    }
  });

  test('health is public', async () => {
    assert.equal((await h.request('GET', '/health')).statusCode, 200);
    const ready = await h.request('GET', '/ready');
    assert.equal(ready.statusCode, 200);
    assert.equal(ready.json().checks.migrations, 'ok');
  });
});
