import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';

describe('GET / and the favicon', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  test('a browser gets a page of links to the dashboard, the docs and health', async () => {
    const res = await h.request('GET', '/', { headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' } });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/html/);
    for (const href of ['/dashboard', '/docs', '/docs/guides/quick-start', '/health', '/operator']) assert.ok(res.body.includes(`href="${href}"`), href);
    for (const href of ['/dashboard', '/docs', '/docs/guides/quick-start', '/health']) {
      const target = await h.request('GET', href);
      assert.ok([200, 302, 303].includes(target.statusCode), `${href} answers ${target.statusCode}`);
    }
  });

  test('an API client (curl sends */*) gets the links as JSON, absolute from PUBLIC_URL', async () => {
    for (const accept of ['*/*', 'application/json', undefined]) {
      const res = await h.request('GET', '/', { headers: accept ? { accept } : {} });
      assert.equal(res.statusCode, 200);
      const body = res.json();
      assert.equal(body.status, 'success');
      assert.equal(body.data.links.dashboard, 'https://pigeon.test/dashboard');
      assert.equal(body.data.links.docs, 'https://pigeon.test/docs');
      assert.equal(body.data.links.health, 'https://pigeon.test/health');
    }
  });

  test('/favicon.ico is an SVG icon, and every dashboard page links it', async () => {
    const icon = await h.request('GET', '/favicon.ico');
    assert.equal(icon.statusCode, 200);
    assert.equal(icon.headers['content-type'], 'image/svg+xml');
    assert.match(icon.body, /^<svg /);
    const login = await h.request('GET', '/dashboard/login');
    assert.match(login.body, /<link rel="icon" type="image\/svg\+xml" href="\/dashboard\/assets\/favicon.svg">/);
    assert.equal((await h.request('GET', '/dashboard/assets/favicon.svg')).headers['content-type'], 'image/svg+xml');
  });
});
