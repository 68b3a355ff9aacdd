/** The public documentation: the interactive reference, the guides and the error catalogue. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GUIDES } from '../../src/http/routes/docs.ts';
import { renderMarkdown } from '../../src/http/markdown.ts';
import { harness, type Harness } from '../helpers/harness.ts';

describe('/docs', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  test('/docs is the interactive reference, with every asset served locally (no CDN)', async () => {
    const page = await h.request('GET', '/docs');
    assert.equal(page.statusCode, 200);
    assert.match(page.headers['content-type'] as string, /text\/html/);
    assert.match(page.body, /swagger-ui/);
    const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string);
    assert.ok(assets.length >= 3, String(assets));
    for (const asset of assets) {
      assert.ok(asset.startsWith('/docs/') || asset.startsWith('./'), `local asset: ${asset}`);
      const res = await h.request('GET', asset.replace(/^\.\//, '/docs/'));
      assert.equal(res.statusCode, 200, asset);
    }
    const init = await h.request('GET', '/docs/static/swagger-initializer.js');
    assert.doesNotMatch(init.body, /['"`]https?:\/\//, 'the initializer loads nothing from elsewhere');
  });

  test('/docs/errors stays the catalogue page', async () => {
    const res = await h.request('GET', '/docs/errors');
    assert.equal(res.statusCode, 200);
    assert.match(res.body, /id="invalid_recipient"/);
  });

  test('every guide renders, and every link between the docs pages resolves', async () => {
    const index = await h.request('GET', '/docs/guides');
    assert.equal(index.statusCode, 200);
    const links = new Set<string>();
    for (const name of GUIDES) {
      const res = await h.request('GET', `/docs/guides/${name}`);
      assert.equal(res.statusCode, 200, name);
      assert.match(res.body, /<h1 id="[^"]+">/, `${name} has a title`);
      for (const m of res.body.matchAll(/href="(\/[^"#]*)/g)) links.add(m[1] as string);
    }
    for (const link of links) assert.equal((await h.request('GET', link)).statusCode, 200, link);
    assert.ok(links.has('/v1/openapi.json') && links.has('/docs/errors'));
  });

  test('an unknown guide is a JSON 404', async () => {
    const res = await h.request('GET', '/docs/guides/nope');
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().code, 'not_found');
  });
});

describe('renderMarkdown', () => {
  test('renders the constructs the guides use and escapes HTML', () => {
    const html = renderMarkdown(
      ['# Title', '', 'Some `<code>` and **bold** and [a link](/docs).', '', '- one', '- two', '', '1. first', '', '| a | b |', '|---|---|', '| 1 | 2 |', '', '```js', 'x < y', '```', '', '> quoted', '', '<script>alert(1)</script>'].join('\n'),
    );
    assert.match(html, /<h1 id="title">Title<\/h1>/);
    assert.match(html, /<code>&lt;code&gt;<\/code>/);
    assert.match(html, /<strong>bold<\/strong>/);
    assert.match(html, /<a href="\/docs">a link<\/a>/);
    assert.match(html, /<ul><li>one<\/li><li>two<\/li><\/ul>/);
    assert.match(html, /<ol><li>first<\/li><\/ol>/);
    assert.match(html, /<th>a<\/th><th>b<\/th>.*<td>1<\/td><td>2<\/td>/s);
    assert.match(html, /<pre><code class="language-js">x &lt; y<\/code><\/pre>/);
    assert.match(html, /<blockquote><p>quoted<\/p><\/blockquote>/);
    assert.doesNotMatch(html, /<script>/);
  });

  test('refuses javascript: links', () => {
    assert.doesNotMatch(renderMarkdown('[x](javascript:alert(1))'), /javascript:/);
  });
});
