import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from './config.ts';

test('tracked links: LINK_BASE_URL defaults to PUBLIC_URL + /l, loses a trailing slash; TTL 90 days; no fallback', () => {
  const c = loadConfig({ PUBLIC_URL: 'https://127.0.0.1:8443/' });
  assert.deepEqual(c.links, { baseUrl: 'https://127.0.0.1:8443/l', ttlDays: 90, fallbackUrl: null, rateLimit: { max: 300, windowMs: 60_000 } });
  const set = loadConfig({ LINK_BASE_URL: 'https://127.0.0.1:9443/', LINK_TTL_DAYS: '30', LINK_FALLBACK_URL: 'https://127.0.0.1/home' });
  assert.equal(set.links.baseUrl, 'https://127.0.0.1:9443');
  assert.equal(set.links.ttlDays, 30);
  assert.equal(set.links.fallbackUrl, 'https://127.0.0.1/home');
});

test('tracked links: a bad LINK_BASE_URL, LINK_FALLBACK_URL or LINK_TTL_DAYS stops the start, named', () => {
  assert.throws(
    () => loadConfig({ LINK_BASE_URL: 'ftp://127.0.0.1/l', LINK_FALLBACK_URL: 'nope', LINK_TTL_DAYS: '0' }),
    (e: ConfigError) => e instanceof ConfigError && ['LINK_BASE_URL', 'LINK_FALLBACK_URL', 'LINK_TTL_DAYS'].every((v) => e.problems.some((p) => p.variable === v)),
  );
});
