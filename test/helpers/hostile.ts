/**
 * Hostile requests for the property tests (test/api/hostile-input.test.ts) and the fuzzer
 * (scripts/fuzz.ts): malformed JSON, wrong types, huge and deeply nested bodies, invalid UTF-8,
 * lone surrogates, control characters, long headers, injection strings and path tricks, aimed at
 * every `/v1` endpoint, the public pages and the dashboard forms. And the one rule every answer
 * must obey.
 */
import { isUtf8 } from 'node:buffer';
import fc from 'fast-check';
import { catalogue } from '../../src/errors/catalogue.ts';

export interface HostileCase {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
  url: string;
  headers: Record<string, string>;
  payload?: string | Buffer;
  /** The dashboard answers with HTML pages: only "no 5xx" applies there. */
  html: boolean;
  /** Built to be wrong: only a 4xx is a right answer. */
  mustFail: boolean;
}

export interface Credentials {
  /** A valid all-scopes API key. */
  key: string;
  /** Cookie header of a logged-in owner, and the CSRF token of that session. */
  owner?: { cookie: string; csrf: string };
  /** Cookie header of a logged-in operator, its CSRF token, and an account and Sender ID to act on. */
  operator?: { cookie: string; csrf: string; accountId: string; senderIdId: string };
}

export const INJECTIONS = [
  "' OR '1'='1",
  "'; DROP TABLE messages; --",
  '" OR ""="',
  '1; SELECT pg_sleep(10)',
  "Robert'); DELETE FROM accounts;--",
  '{{7*7}}',
  '${7*7}',
  '<%= 7*7 %>',
  '#{7*7}',
  '{{constructor.constructor("return process")()}}',
  '<script>alert(1)</script>',
  '"><img src=x onerror=alert(1)>',
  '../../../../etc/passwd',
  '..\\..\\..\\windows\\win.ini',
  '%2e%2e%2f%2e%2e%2fetc%2fpasswd',
  '/dev/zero',
  '$(reboot)',
  '`id`',
  '__proto__',
  'constructor',
  'prototype',
  'NaN',
  'Infinity',
  '-0',
  '1e309',
  '%s%s%s%s%n',
  '\u0000',
  '\u202e\u0000\ufeff',
  'pk_live_' + '0'.repeat(32),
];

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
const control = fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c));

/** A string meant to hurt: any code point, lone surrogates, control characters, injections, long runs. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: fc.oneof(loneSurrogate, control, fc.constantFrom('a', '+', '1', ' ', '"', '\\', '\u00e9', '\u{1f600}')), maxLength: 40 }),
  fc.constantFrom(...INJECTIONS),
  fc.tuple(fc.constantFrom('a', '\u00e9', '\u{1f600}', '€', '\\'), fc.integer({ min: 161, max: 20_000 })).map(([c, n]) => c.repeat(n)),
  fc.constantFrom('+447911123456', '+1 (415) 555-0100', 'Acme', 'sms.delivered', 'https://127.0.0.1/hook', 'https://[::1]/'),
);

/** Any JSON value, with hostile strings and awkward numbers at the leaves. */
export const hostileValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hostileString,
    fc.constantFrom(null, true, false, 0, -1, 1.5, 2 ** 53, -(2 ** 63), 1e308, [], {}),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(hostileString, fc.constantFrom('__proto__', 'constructor', 'to', 'from', 'message')), tie('value'), { maxKeys: 4 }),
  ),
})).value;

const validBodies: Record<string, Record<string, unknown>> = {
  '/v1/sms/send': { to: '+447911123456', from: 'Acme', message: 'Hello', callback_url: 'https://example.com/hook' },
  '/v1/sms/bulk': { from: 'Acme', messages: [{ to: '+447911123456', message: 'Hello' }], callback_url: 'https://example.com/hook' },
  '/v1/sms/sender-ids': { name: 'Fuzzco' },
};

/** A valid body with one field replaced, removed, or joined by an unknown one. */
const mutatedBody = (path: string): fc.Arbitrary<unknown> => {
  const valid = validBodies[path]!;
  const fields = Object.keys(valid);
  return fc.oneof(
    fc.tuple(fc.constantFrom(...fields), hostileValue).map(([f, v]) => ({ ...valid, [f]: v })),
    fc.constantFrom(...fields).map((f) => Object.fromEntries(Object.entries(valid).filter(([k]) => k !== f))),
    fc.tuple(hostileString, hostileValue).map(([k, v]) => ({ ...valid, [k]: v })),
    path === '/v1/sms/bulk' ? hostileValue.map((v) => ({ ...valid, messages: [{ to: '+447911123456', message: 'x' }, v] })) : hostileValue,
  );
};

/** Bytes that are not a usable JSON object. */
const brokenJson: fc.Arbitrary<string | Buffer> = fc.oneof(
  // Truncated or corrupted JSON.
  fc.tuple(fc.constantFrom(...Object.values(validBodies)).map((b) => JSON.stringify(b)), fc.nat()).map(([s, n]) => s.slice(0, n % s.length)),
  fc.tuple(fc.constantFrom(...Object.values(validBodies)).map((b) => JSON.stringify(b)), fc.nat(), fc.constantFrom('"', '{', '}', ',', ':', '\\', '\u0000', 'x'))
    .map(([s, n, c]) => s.slice(0, n % s.length) + c + s.slice((n % s.length) + 1)),
  fc.constantFrom('', ' ', 'null', 'true', '0', '"x"', '[]', '{', '}', '{"to":}', "{'to':'x'}", '{"a":1,}', 'NaN', '{"to":"\\ud800"}', '{"message":"\\u0000"}', '\ufeff{}'),
  // Deep nesting.
  fc.integer({ min: 100, max: 200_000 }).map((n) => '['.repeat(n) + ']'.repeat(n)),
  fc.integer({ min: 100, max: 100_000 }).map((n) => '{"to":'.repeat(n) + '1' + '}'.repeat(n)),
  fc.integer({ min: 100, max: 100_000 }).map((n) => '['.repeat(n)),
  // Invalid UTF-8 inside a string value or the whole body.
  fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes) => Buffer.concat([Buffer.from('{"to":"+447911123456","from":"Acme","message":"'), Buffer.from(bytes), Buffer.from('"}')])),
  fc.constantFrom(Buffer.from([0xc0, 0xaf]), Buffer.from([0xff, 0xfe, 0x7b, 0x00, 0x7d, 0x00]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('{"message":"\xed\xa0\x80"}', 'latin1')),
  fc.string({ unit: 'binary', maxLength: 200 }),
);

const contentTypes = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=latin1',
  'application/json; charset=utf-16le',
  'APPLICATION/JSON',
  'application/json, text/plain',
  'text/plain',
  'text/html',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=zzz',
  'application/octet-stream',
  'application/vnd.api+json',
  '*/*',
  ';;;',
);

/** Header values a client can physically send: no CR, LF or NUL. */
const headerValue = fc.oneof(
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 300 }),
  fc.constantFrom(...INJECTIONS.filter((s) => /^[\x20-\x7e]*$/.test(s))),
  fc.integer({ min: 256, max: 8000 }).map((n) => 'k'.repeat(n)),
  fc.constant(''),
);

/** encodeURIComponent, except that a lone surrogate becomes its (invalid) three UTF-8-style bytes. */
function enc(s: string): string {
  return s.replace(/[\s\S]/gu, (ch) => {
    const c = ch.charCodeAt(0);
    if (ch.length === 1 && c >= 0xd800 && c <= 0xdfff) {
      return [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
    }
    return encodeURIComponent(ch);
  });
}

const v1Get = ['/v1/sms/sender-ids', '/v1/sms/delivery-reports', '/v1/webhooks/events', '/v1/account'];
const queryKeys = ['limit', 'page', 'status', 'message_id', 'batch_id', 'cursor', 'from', 'to', 'since', 'event', '__proto__', 'status[]'];

const uniqueQuery = fc
  .uniqueArray(fc.tuple(fc.constantFrom(...queryKeys), fc.oneof(hostileString, fc.constantFrom('-1', '0', '201', 'sent', ''))), { maxLength: 4, selector: ([k]) => k })
  .map((pairs) => (pairs.length === 0 ? '' : `?${pairs.map(([k, v]) => `${enc(k)}=${enc(v)}`).join('&')}`));

const query = fc
  .array(fc.tuple(fc.constantFrom(...queryKeys), fc.oneof(hostileString, fc.constantFrom('-1', '0', '201', '1e3', '0x10', '99999999999999999999', 'sent', ''))), { maxLength: 4 })
  .map((pairs) => (pairs.length === 0 ? '' : `?${pairs.map(([k, v]) => `${enc(k)}=${enc(v)}`).join('&')}`));

const rawQuery = fc.constantFrom('?limit=%ZZ', '?status=%', '?a=%C0%AF', '?limit[]=1&limit[]=2', '?limit=1&limit=2', `?limit=${'9'.repeat(400)}`, '?%00=%00', '?&&&=&');

const pathTrick = fc.oneof(
  fc.constantFrom(
    '/v1/sms/send/../../../etc/passwd',
    '/v1/%2e%2e/%2e%2e/package.json',
    '/v1/sms/%2fsend',
    '/v1//sms//send',
    '/v1/sms/send%00',
    '/v1/SMS/SEND',
    '/v1/sms/send;jsessionid=1',
    '/docs/guides/..%2f..%2fpackage.json',
    '/docs/guides/%2e%2e%2f%2e%2e%2fREADME',
    '/docs/static/..%2f..%2f..%2fpackage.json',
    '/docs/static/%2e%2e/%2e%2e/package.json',
    '/dashboard/assets/..%2f..%2fapp.ts',
    '/dashboard/assets/%2e%2e%2f%2e%2e%2f%2e%2e%2fpackage.json',
    '/v1/webhooks/events/..%2f..%2faccount/retry',
    '/%',
    '/%%32%65',
    '/\u00e9',
    '//etc/passwd',
    `/v1/${'a/'.repeat(500)}`,
    `/${'x'.repeat(5000)}`,
  ),
  fc.tuple(fc.constantFrom('/v1/webhooks/events/', '/docs/guides/', '/dashboard/assets/', '/dashboard/messages/', '/v1/sms/sender-ids/'), hostileString.filter((s) => s.trim() !== '')).map(
    ([p, s]) => p + enc(s.slice(0, 300)),
  ),
);

/** Whether a body could be a JSON object at all (a corrupted body sometimes still is one). */
function couldBeObject(payload: string | Buffer): boolean {
  if (Buffer.isBuffer(payload) && !isUtf8(payload)) return false;
  try {
    const value: unknown = JSON.parse(payload.toString());
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}

function json(payload: unknown): string {
  return JSON.stringify(payload) ?? 'null';
}

/**
 * Known open defects, left out when `avoidKnownIssues` is set (the test suite, where each has a
 * `todo` test instead) and kept in for the fuzzer, which reports them until they are fixed:
 * - a malformed multipart body on a dashboard form is a 500;
 * - a query key given twice on a dashboard page (`?batch_id=&batch_id=1`) is a 500.
 */
export interface HostileOptions {
  avoidKnownIssues?: boolean;
}

/** Every kind of hostile request, given the credentials to get past authentication. */
export function hostileCase(creds: Credentials, opts: HostileOptions = {}): fc.Arbitrary<HostileCase> {
  const dashboardQuery = opts.avoidKnownIssues ? uniqueQuery : fc.oneof(query, rawQuery);
  const formTypes = ['application/x-www-form-urlencoded', 'application/json', 'text/plain', ...(opts.avoidKnownIssues ? [] : ['multipart/form-data; boundary=zzz'])];
  const auth = { authorization: `Bearer ${creds.key}` };
  const posts = Object.keys(validBodies);
  const cases: fc.Arbitrary<HostileCase>[] = [
    // Wrong types and values in otherwise valid JSON.
    fc.constantFrom(...posts).chain((path) =>
      mutatedBody(path).map((body) => ({ method: 'POST' as const, url: path, headers: { ...auth, 'content-type': 'application/json' }, payload: json(body), html: false, mustFail: false })),
    ),
    // Not JSON, broken JSON, deep nesting, invalid UTF-8.
    fc.tuple(fc.constantFrom(...posts, '/v1/webhooks/events/whk_x/retry'), brokenJson).map(([url, payload]) => ({
      method: 'POST' as const,
      url,
      headers: { ...auth, 'content-type': 'application/json' },
      payload,
      html: false,
      mustFail: url === '/v1/webhooks/events/whk_x/retry' || !couldBeObject(payload),
    })),
    // Any body with any content type, and hostile headers.
    fc.tuple(fc.constantFrom(...posts), fc.oneof(hostileValue.map(json), brokenJson), contentTypes, headerValue, headerValue).map(([url, payload, type, idem, other]) => ({
      method: 'POST' as const,
      url,
      headers: { ...auth, 'content-type': type, 'idempotency-key': idem, 'x-forwarded-for': other, 'user-agent': other },
      payload,
      html: false,
      mustFail: false,
    })),
    // Hostile queries.
    fc.tuple(fc.constantFrom(...v1Get), fc.oneof(query, rawQuery)).map(([path, q]) => ({ method: 'GET' as const, url: path + q, headers: auth, html: false, mustFail: false })),
    // Hostile Authorization headers.
    fc.tuple(fc.constantFrom(...v1Get, ...posts), headerValue).map(([url, value]) => ({
      method: posts.includes(url) ? ('POST' as const) : ('GET' as const),
      url,
      headers: { authorization: `Bearer ${value}`, 'content-type': 'application/json' },
      payload: posts.includes(url) ? json(validBodies[url]) : undefined,
      html: false,
      mustFail: true,
    })),
    // Path tricks and wrong methods.
    fc.tuple(pathTrick, fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH') as fc.Arbitrary<HostileCase['method']>).map(([url, method]) => ({
      method,
      url,
      headers: { ...auth, ...(method === 'GET' ? {} : { 'content-type': 'application/json' }) },
      payload: method === 'GET' ? undefined : '{}',
      html: url.startsWith('/dashboard'),
      mustFail: true,
    })),
  ];

  const form = (fields: fc.Arbitrary<Record<string, unknown>>) =>
    fc.oneof(
      fields.map((f) => new URLSearchParams(Object.entries(f).map(([k, v]) => [k, typeof v === 'string' ? v : json(v)])).toString()),
      fc.constantFrom('%', '%ZZ=1', 'a=%C0%AF', '&&&', '=', 'a'.repeat(50_000), '_csrf=x&_csrf=y', 'label[]=1&label[__proto__]=2'),
      fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)),
    );
  const formCase = (url: string, cookie: string, csrf: string, fields: fc.Arbitrary<Record<string, unknown>>) =>
    fc.tuple(form(fields.map((f) => ({ _csrf: csrf, ...f }))), fc.constantFrom(...formTypes)).map(
      ([payload, type]) => ({ method: 'POST' as const, url, headers: { cookie, 'content-type': type }, payload, html: true, mustFail: false }),
    );
  if (creds.owner) {
    const { cookie, csrf } = creds.owner;
    cases.push(
      formCase('/dashboard/settings/api-keys', cookie, csrf, fc.record({ label: hostileValue, scopes: hostileValue }, { requiredKeys: [] })),
      formCase('/dashboard/sender-ids', cookie, csrf, fc.record({ name: hostileValue }, { requiredKeys: [] })),
      formCase('/dashboard/settings/webhook/reveal', cookie, csrf, fc.record({ x: hostileValue }, { requiredKeys: [] })),
      fc.tuple(fc.constantFrom('/dashboard/messages', '/dashboard/credits', '/dashboard/sender-ids/check'), dashboardQuery).map(([path, q]) => ({
        method: 'GET' as const,
        url: path + q,
        headers: { cookie },
        html: true,
        mustFail: false,
      })),
    );
  }
  if (creds.operator) {
    const { cookie, csrf, accountId, senderIdId } = creds.operator;
    cases.push(
      formCase(`/operator/accounts/${accountId}/credits`, cookie, csrf, fc.record({ amount: hostileValue, note: hostileValue }, { requiredKeys: [] })),
      formCase(`/operator/sender-ids/${senderIdId}/reject`, cookie, csrf, fc.record({ reason: hostileValue }, { requiredKeys: [] })),
      formCase(`/operator/sender-ids/${senderIdId}/request-info`, cookie, csrf, fc.record({ message: hostileValue }, { requiredKeys: [] })),
      fc.tuple(fc.constantFrom('/operator/accounts', '/operator/sender-ids', '/operator/outbox'), dashboardQuery).map(([path, q]) => ({
        method: 'GET' as const,
        url: path + q,
        headers: { cookie },
        html: true,
        mustFail: false,
      })),
    );
  }
  return fc.oneof(...cases);
}

/** Files that must never be served, whatever the path. */
const LEAKS = [/root:x:0:0/, /"name":\s*"pigeon"/, /\[extensions\]/, /import .* from '/];

/**
 * The rule for every answer: never a 5xx; an error is JSON `{status: 'error', code, ...}` with a
 * catalogued code of the same HTTP status (the dashboard's HTML pages excepted); no file leaks.
 * Returns what is wrong, or null.
 */
export function judge(c: HostileCase, status: number, contentType: string | undefined, body: string): string | null {
  if (status >= 500) return `${status}: ${body.slice(0, 300)}`;
  for (const leak of LEAKS) if (leak.test(body) && !c.url.startsWith('/docs')) return `leaks ${leak}: ${body.slice(0, 200)}`;
  if (c.mustFail && status < 400 && !(status >= 300 && c.html)) return `expected a 4xx, got ${status}`;
  if (status < 400) return null;
  if (c.html && !/json/.test(contentType ?? '')) return null;
  let parsed: { status?: string; code?: string };
  try {
    parsed = JSON.parse(body);
  } catch {
    return `${status} is not JSON: ${body.slice(0, 200)}`;
  }
  if (parsed.status !== 'error') return `${status} body has no status "error": ${body.slice(0, 200)}`;
  const spec = catalogue[parsed.code as keyof typeof catalogue];
  if (!spec) return `${status} with uncatalogued code ${parsed.code}`;
  if (spec.status !== status) return `${parsed.code} is catalogued as ${spec.status}, answered with ${status}`;
  return null;
}

/** A short description of a case, for failure messages. */
export function describeCase(c: HostileCase): string {
  const payload = c.payload === undefined ? '' : Buffer.isBuffer(c.payload) ? `<${c.payload.length} bytes>` : c.payload.length > 200 ? `${c.payload.slice(0, 200)}… (${c.payload.length})` : c.payload;
  const headers = Object.fromEntries(Object.entries(c.headers).map(([k, v]) => [k, v.length > 80 ? `${v.slice(0, 80)}… (${v.length})` : v]));
  return `${c.method} ${c.url.slice(0, 300)} ${JSON.stringify(headers)} ${JSON.stringify(payload)}`;
}
