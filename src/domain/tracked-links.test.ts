import assert from 'node:assert/strict';
import { test } from 'node:test';
import { randomBytes } from 'node:crypto';
import { findUrls, isBotFetch, LINK_CODE_PATTERN, linkCode, MAX_TRACKED_LINKS, rewriteLinks } from './tracked-links.ts';

const urls = (text: string) => findUrls(text).map((u) => u.url);

test('a text without a URL has none', () => {
  assert.deepEqual(findUrls(''), []);
  assert.deepEqual(findUrls('Your order 1234 is ready. Reply STOP to opt out.'), []);
  assert.deepEqual(urls('http:// is a scheme, ftp://127.0.0.1/x is not tracked, nor 127.0.0.1/x'), []);
  assert.deepEqual(urls('http://. and https://'), []);
});

test('a URL ends at a space and loses the punctuation that ends its sentence', () => {
  assert.deepEqual(urls('Sale: https://127.0.0.1/sale.'), ['https://127.0.0.1/sale']);
  assert.deepEqual(urls('Go to http://127.0.0.1:8080/a?b=1&c=2, now!'), ['http://127.0.0.1:8080/a?b=1&c=2']);
  assert.deepEqual(urls('Really https://127.0.0.1/x?!'), ['https://127.0.0.1/x']);
  assert.deepEqual(urls('"https://127.0.0.1/q"'), ['https://127.0.0.1/q']);
  assert.deepEqual(urls("'https://127.0.0.1/q'"), ['https://127.0.0.1/q']);
  assert.deepEqual(urls('https://127.0.0.1/file.html'), ['https://127.0.0.1/file.html']);
  assert.deepEqual(urls('https://127.0.0.1/a#frag...'), ['https://127.0.0.1/a#frag']);
});

test('brackets: around a URL they are not part of it; inside it balanced ones are', () => {
  assert.deepEqual(urls('Our menu (https://127.0.0.1/menu) is new'), ['https://127.0.0.1/menu']);
  assert.deepEqual(urls('(see https://127.0.0.1/menu).'), ['https://127.0.0.1/menu']);
  assert.deepEqual(urls('https://127.0.0.1/wiki/Foo_(bar)'), ['https://127.0.0.1/wiki/Foo_(bar)']);
  assert.deepEqual(urls('(https://127.0.0.1/wiki/Foo_(bar))'), ['https://127.0.0.1/wiki/Foo_(bar)']);
  assert.deepEqual(urls('[https://127.0.0.1/x]'), ['https://127.0.0.1/x']);
  assert.deepEqual(urls('<https://127.0.0.1/x>'), ['https://127.0.0.1/x']);
});

test('several links, mixed case schemes, line breaks; not inside a word', () => {
  const text = 'A: HTTPS://127.0.0.1/a\nB: http://127.0.0.1/b C:https://127.0.0.1/c; xhttp://127.0.0.1/d';
  const found = findUrls(text);
  assert.deepEqual(found.map((u) => u.url), ['HTTPS://127.0.0.1/a', 'http://127.0.0.1/b', 'https://127.0.0.1/c']);
  for (const u of found) assert.equal(text.slice(u.start, u.end), u.url);
});

test('non-ASCII text around and inside URLs keeps its offsets', () => {
  const text = 'Soldes 🎉 https://127.0.0.1/été, à bientôt';
  const [u] = findUrls(text);
  assert.equal(u!.url, 'https://127.0.0.1/été');
  assert.equal(text.slice(u!.start, u!.end), u!.url);
});

test('rewriting replaces each URL by the base and a distinct code, and keeps the rest', () => {
  let n = 0;
  const codes = ['AAAAAAAA', 'AAAAAAAA', 'BBBBBBBB'];
  const out = rewriteLinks('Hi! https://127.0.0.1/a, and (https://127.0.0.1/b). Bye', 'https://127.0.0.1:3000/l', () => codes[n++]!);
  assert.ok(out);
  assert.equal(out.text, 'Hi! https://127.0.0.1:3000/l/AAAAAAAA, and (https://127.0.0.1:3000/l/BBBBBBBB). Bye');
  assert.deepEqual(out.links, [
    { code: 'AAAAAAAA', url: 'https://127.0.0.1/a' },
    { code: 'BBBBBBBB', url: 'https://127.0.0.1/b' },
  ]);
  assert.deepEqual(rewriteLinks('no links', 'https://127.0.0.1/l', () => 'X'), { text: 'no links', links: [] });
});

test('a text with more links than the bound is refused', () => {
  const text = Array.from({ length: MAX_TRACKED_LINKS + 1 }, (_, i) => `http://127.0.0.1/${i}`).join(' ');
  assert.equal(rewriteLinks(text, 'https://127.0.0.1/l', () => linkCode(randomBytes)), null);
  assert.ok(rewriteLinks(text, 'https://127.0.0.1/l', () => linkCode(randomBytes), MAX_TRACKED_LINKS + 1));
});

test('codes are 8 characters of [0-9A-Za-z], bytes of 248 and above are skipped', () => {
  for (let i = 0; i < 200; i++) assert.match(linkCode(randomBytes), LINK_CODE_PATTERN);
  // 248..255 would bias the alphabet's start; 61 is 'z', 62 wraps to '0'.
  const bytes = [255, 248, 0, 61, 62, 10, 36, 1, 2, 3, 4];
  assert.equal(linkCode((n) => Uint8Array.from(bytes.slice(0, n))), '0z0Aa123');
});

test('HEAD, no user agent and preview, crawler and scanner agents are bots; browsers are not', () => {
  const phone = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1';
  assert.equal(isBotFetch('GET', phone), false);
  assert.equal(isBotFetch('HEAD', phone), true);
  assert.equal(isBotFetch('GET', undefined), true);
  assert.equal(isBotFetch('GET', ' '), true);
  assert.equal(isBotFetch('GET', 'WhatsApp/2.23.20.0 A'), true);
  assert.equal(isBotFetch('GET', 'facebookexternalhit/1.1 (+http://127.0.0.1/externalhit_uatext.php)'), true);
  assert.equal(isBotFetch('GET', 'Mozilla/5.0 (compatible; Googlebot/2.1)'), true);
  assert.equal(isBotFetch('GET', 'Slackbot-LinkExpanding 1.0'), true);
  assert.equal(isBotFetch('GET', 'curl/8.5.0'), true);
});
