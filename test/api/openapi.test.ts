/**
 * The OpenAPI document: valid OpenAPI 3.1 by a standard validator, complete (every served /v1
 * route, both ways), and true (real responses, headers and webhook payloads match its schemas).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { LightMyRequestResponse } from 'fastify';
import { catalogue } from '../../src/errors/catalogue.ts';
import { OPENAPI_PATH, routesServedBy } from '../../src/http/openapi.ts';
import { assignNumber } from '../../src/services/numbers/numbers.ts';
import { harness, type Harness } from '../helpers/harness.ts';

type Doc = {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, { post: Operation }>;
  components: { schemas: Record<string, object>; securitySchemes: Record<string, { type: string; scheme: string }> };
};
type Operation = {
  parameters?: { name: string; in: string }[];
  responses: Record<string, { headers?: Record<string, unknown>; content?: { 'application/json': { schema: object } } }>;
};

/** `/v1/webhooks/events/:id/retry` → `/v1/webhooks/events/{id}/retry`. */
const templated = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

describe('OpenAPI document', () => {
  let h: Harness;
  let doc: Doc;
  let ajv: Ajv2020;
  /** Operations (`POST /v1/sms/send`) for which a real success response was checked. */
  const succeeded = new Set<string>();

  before(async () => {
    h = await harness({ RATE_LIMIT_MAX: '25', WEBHOOK_RETRY_DELAYS_MS: '0', LINK_BASE_URL: 'https://127.0.0.1:8443/l' });
    const res = await h.request('GET', OPENAPI_PATH);
    assert.equal(res.statusCode, 200);
    doc = res.json();
    ajv = new Ajv2020({ strict: false, allErrors: true });
    ajv.addFormat('date-time', (s: string) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(s));
    ajv.addSchema(doc, 'openapi');
  });
  after(() => h.close());

  const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

  /** Checks one real response against the document: status documented, body valid, headers present. */
  function check(method: string, path: string, res: LightMyRequestResponse): void {
    const where = `${method} ${path} → ${res.statusCode}`;
    const op = doc.paths[path]?.[method.toLowerCase()];
    assert.ok(op, `${method} ${path} is documented`);
    const response = op.responses[String(res.statusCode)];
    assert.ok(response, `${where} is documented (documented: ${Object.keys(op.responses).join(', ')})`);
    if (res.statusCode === 204) {
      assert.equal(res.body, '', `${where} has no body`);
      succeeded.add(`${method} ${path}`);
      return;
    }
    const validate = ajv.getSchema(`openapi#/${pointer('paths', path, method.toLowerCase(), 'responses', String(res.statusCode), 'content', 'application/json', 'schema')}`);
    assert.ok(validate, `${where} has a schema`);
    assert.ok(validate(res.json()), `${where}: ${ajv.errorsText(validate.errors)} in ${res.body.slice(0, 300)}`);
    for (const name of Object.keys(response.headers ?? {})) {
      if (name === 'Idempotent-Replayed') continue; // only on replays, checked on its own
      assert.ok(res.headers[name.toLowerCase()] !== undefined, `${where} carries the documented header ${name}`);
    }
    if (res.statusCode < 300) succeeded.add(`${method} ${path}`);
  }

  test('is served without a key and is valid OpenAPI 3.1', async () => {
    assert.equal(doc.openapi, '3.1.0');
    const result = await new Validator().validate(doc as never);
    assert.equal(result.valid, true, JSON.stringify(result.errors));
  });

  test('documents every served /v1 route, and only served routes', () => {
    const served = routesServedBy(h.app).filter((r) => r.url.startsWith('/v1/') && r.url !== OPENAPI_PATH && r.method !== 'HEAD');
    assert.ok(served.length >= 8, `found the API routes: ${served.map((r) => r.url)}`);
    for (const r of served) assert.ok(doc.paths[templated(r.url)]?.[r.method.toLowerCase()], `${r.method} ${r.url} is in the document`);
    const servedKeys = new Set(served.map((r) => `${r.method.toLowerCase()} ${templated(r.url)}`));
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const method of Object.keys(ops)) assert.ok(servedKeys.has(`${method} ${path}`), `${method} ${path} is served`);
    }
  });

  test('leaves out health, docs and dashboard routes', () => {
    assert.deepEqual(Object.keys(doc.paths).filter((p) => !p.startsWith('/v1/')), []);
    assert.equal(doc.paths[OPENAPI_PATH], undefined);
  });

  test('declares the bearer scheme, the headers and the webhooks', () => {
    assert.deepEqual(doc.components.securitySchemes.bearerAuth, { ...doc.components.securitySchemes.bearerAuth, type: 'http', scheme: 'bearer' });
    const send = doc.paths['/v1/sms/send']!.post!;
    assert.ok(send.parameters?.some((p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key'));
    assert.deepEqual(Object.keys(send.responses['200']!.headers ?? {}).sort(), ['Idempotent-Replayed', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']);
    assert.ok(send.responses['429']!.headers?.['Retry-After']);
    assert.deepEqual(Object.keys(doc.webhooks).sort(), ['recipient.opted_in', 'recipient.opted_out', 'sms.delivered', 'sms.failed', 'sms.received', 'sms.sent']);
    for (const hook of Object.values(doc.webhooks)) {
      assert.deepEqual(hook.post.parameters?.map((p) => p.name), ['X-Pigeon-Event-Id', 'X-Pigeon-Signature']);
    }
  });

  test('error responses carry catalogue codes of their own status', () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        for (const [status, response] of Object.entries(op.responses)) {
          if (Number(status) < 400) continue;
          const schema = response.content?.['application/json'].schema as { properties: { code: { enum: string[] } } };
          for (const code of schema.properties.code.enum) {
            const spec = catalogue[code as keyof typeof catalogue];
            assert.ok(spec, `${method} ${path}: ${code} is catalogued`);
            assert.equal(spec.status, Number(status), `${method} ${path}: ${code} is a ${spec.status}`);
          }
        }
      }
    }
    const sendCodes = Object.values(doc.paths['/v1/sms/send']!.post!.responses).flatMap(
      (r) => (r.content?.['application/json'].schema as { properties?: { code?: { enum?: string[] } } }).properties?.code?.enum ?? [],
    );
    for (const code of ['invalid_recipient', 'invalid_sender_id', 'insufficient_credits', 'invalid_api_key', 'rate_limit_exceeded', 'idempotency_key_reused']) {
      assert.ok(sendCodes.includes(code), `send documents ${code}`);
    }
  });

  test('real responses match their schemas', async () => {
    const { key } = await h.customer({ credits: 100 });
    const send = { to: '+447911123456', from: 'Acme', message: 'Checked against the document', callback_url: 'https://127.0.0.1:9/hooks' };
    const idem = { 'idempotency-key': 'doc-check-1' };

    const sent = await h.request('POST', '/v1/sms/send', { key, body: send, headers: idem });
    check('POST', '/v1/sms/send', sent);
    const replay = await h.request('POST', '/v1/sms/send', { key, body: send, headers: idem });
    check('POST', '/v1/sms/send', replay);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    check('POST', '/v1/sms/send', await h.request('POST', '/v1/sms/send', { key, body: { ...send, message: 'other' }, headers: idem }));
    check('POST', '/v1/sms/send', await h.request('POST', '/v1/sms/send', { key, body: { ...send, to: '12' } }));
    check('POST', '/v1/sms/send', await h.request('POST', '/v1/sms/send', { key, body: { ...send, from: 'Nobody' } }));
    check('POST', '/v1/sms/send', await h.request('POST', '/v1/sms/send', { key, body: { to: 1 } }));
    check('POST', '/v1/sms/send', await h.request('POST', '/v1/sms/send', { key, body: 'plain text', headers: { 'content-type': 'text/plain' } }));
    check('POST', '/v1/sms/send', await h.request('POST', '/v1/sms/send', { key: 'pk_live_nope', body: send }));

    const poor = await h.customer({ credits: 0 });
    check('POST', '/v1/sms/send', await h.request('POST', '/v1/sms/send', { key: poor.key, body: send }));
    check('POST', '/v1/sms/bulk', await h.request('POST', '/v1/sms/bulk', { key: poor.key, body: { from: 'Acme', messages: [send] } }));
    const readOnly = await h.customer({ scopes: 'account:read' });
    check('POST', '/v1/sms/send', await h.request('POST', '/v1/sms/send', { key: readOnly.key, body: send }));

    const bulk = await h.request('POST', '/v1/sms/bulk', {
      key,
      body: { from: 'Acme', callback_url: send.callback_url, messages: [{ to: '+447911120000', message: 'fails' }, { to: 'bad', message: 'x' }] },
    });
    check('POST', '/v1/sms/bulk', bulk);
    check('POST', '/v1/sms/bulk', await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', messages: [] } }));

    const later = new Date(h.clock.now() + 60_000).toISOString();
    const scheduled = await h.request('POST', '/v1/sms/send', { key, body: { ...send, send_at: later, validity_period: 3600 } });
    check('POST', '/v1/sms/send', scheduled);
    check('POST', '/v1/sms/send', await h.request('POST', '/v1/sms/send', { key, body: { ...send, send_at: 'tomorrow' } }));
    check('POST', '/v1/sms/{message_id}/cancel', await h.request('POST', `/v1/sms/${scheduled.json().message_id}/cancel`, { key }));
    check('POST', '/v1/sms/{message_id}/cancel', await h.request('POST', `/v1/sms/${scheduled.json().message_id}/cancel`, { key }));
    check('POST', '/v1/sms/{message_id}/cancel', await h.request('POST', '/v1/sms/msg_nope/cancel', { key }));
    const scheduledBulk = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', send_at: later, messages: [{ to: '+447911123456', message: 'later' }] } });
    check('POST', '/v1/sms/bulk', scheduledBulk);
    check('POST', '/v1/sms/batches/{batch_id}/cancel', await h.request('POST', `/v1/sms/batches/${scheduledBulk.json().batch_id}/cancel`, { key }));
    check('POST', '/v1/sms/batches/{batch_id}/cancel', await h.request('POST', `/v1/sms/batches/${scheduledBulk.json().batch_id}/cancel`, { key }));
    check('GET', '/v1/sms/delivery-reports', await h.request('GET', '/v1/sms/delivery-reports?status=canceled', { key }));

    // Redaction, on an account of its own (this one's requests are counted against RATE_LIMIT_MAX).
    const r = await h.customer();
    const toCancel = await h.request('POST', '/v1/sms/send', { key: r.key, body: { ...send, send_at: later } });
    await h.request('POST', `/v1/sms/${toCancel.json().message_id}/cancel`, { key: r.key });
    check('POST', '/v1/sms/{message_id}/redact', await h.request('POST', `/v1/sms/${toCancel.json().message_id}/redact`, { key: r.key }));
    check('POST', '/v1/sms/{message_id}/redact', await h.request('POST', `/v1/sms/${toCancel.json().message_id}/redact`, { key: r.key }));
    check('POST', '/v1/sms/{message_id}/redact', await h.request('POST', '/v1/sms/msg_nope/redact', { key: r.key }));
    const onItsWay = await h.request('POST', '/v1/sms/send', { key: r.key, body: send });
    check('POST', '/v1/sms/{message_id}/redact', await h.request('POST', `/v1/sms/${onItsWay.json().message_id}/redact`, { key: r.key }));
    const bulkToCancel = await h.request('POST', '/v1/sms/bulk', { key: r.key, body: { from: 'Acme', send_at: later, messages: [{ to: '+447911123456', message: 'later' }] } });
    await h.request('POST', `/v1/sms/batches/${bulkToCancel.json().batch_id}/cancel`, { key: r.key });
    check('POST', '/v1/sms/batches/{batch_id}/redact', await h.request('POST', `/v1/sms/batches/${bulkToCancel.json().batch_id}/redact`, { key: r.key }));
    check('POST', '/v1/sms/batches/{batch_id}/redact', await h.request('POST', '/v1/sms/batches/bat_nope/redact', { key: r.key }));
    await assignNumber(h.ctx, r.accountId, '+447700900779');
    const received = await h.request('POST', '/v1/simulator/inbound', { key: r.key, body: { from: '+447911123456', to: '+447700900779', message: 'Hi' } });
    check('POST', '/v1/sms/inbound/{id}/redact', await h.request('POST', `/v1/sms/inbound/${received.json().data.id}/redact`, { key: r.key }));
    check('POST', '/v1/sms/inbound/{id}/redact', await h.request('POST', '/v1/sms/inbound/in_nope/redact', { key: r.key }));
    const erasure = await h.request('POST', '/v1/privacy/erasures', { key: r.key, body: { phone: '+447911000999' } });
    check('POST', '/v1/privacy/erasures', erasure);
    check('POST', '/v1/privacy/erasures', await h.request('POST', '/v1/privacy/erasures', { key: r.key, body: { phone: 'nope' } }));
    check('GET', '/v1/privacy/erasures/{id}', await h.request('GET', `/v1/privacy/erasures/${erasure.json().data.id}`, { key: r.key }));
    check('GET', '/v1/privacy/erasures/{id}', await h.request('GET', '/v1/privacy/erasures/era_nope', { key: r.key }));
    check('GET', '/v1/audit-events', await h.request('GET', '/v1/audit-events?action=erasure', { key: r.key }));
    check('GET', '/v1/audit-events', await h.request('GET', '/v1/audit-events?since=never', { key: r.key }));

    check('GET', '/v1/sms/sender-ids', await h.request('GET', '/v1/sms/sender-ids', { key }));
    check('POST', '/v1/sms/sender-ids', await h.request('POST', '/v1/sms/sender-ids', { key, body: { name: 'Brand7' } }));
    check('POST', '/v1/sms/sender-ids', await h.request('POST', '/v1/sms/sender-ids', { key, body: { name: 'Brand7' } }));
    check('POST', '/v1/sms/sender-ids', await h.request('POST', '/v1/sms/sender-ids', { key, body: { name: 'no spaces' } }));
    check('POST', '/v1/sms/sender-ids', await h.request('POST', '/v1/sms/sender-ids', { key, body: { name: 'POLICE' } }));

    await h.workers.drain();
    h.clock.advance(2000);
    await h.workers.drain();
    check('GET', '/v1/sms/delivery-reports', await h.request('GET', '/v1/sms/delivery-reports', { key }));
    check('GET', '/v1/sms/delivery-reports', await h.request('GET', `/v1/sms/delivery-reports?batch_id=${bulk.json().batch_id}&status=failed&limit=5`, { key }));
    check('GET', '/v1/sms/delivery-reports', await h.request('GET', '/v1/sms/delivery-reports?limit=500', { key }));
    const tracked = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'Sale: https://127.0.0.1/sale', track_links: true } });
    check('POST', '/v1/sms/send', tracked);
    check('GET', '/v1/sms/links', await h.request('GET', `/v1/sms/links?message_id=${tracked.json().message_id}`, { key }));
    check('GET', '/v1/sms/links', await h.request('GET', `/v1/sms/links?batch_id=${bulk.json().batch_id}`, { key }));
    check('GET', '/v1/sms/links', await h.request('GET', '/v1/sms/links', { key }));
    check('GET', '/v1/account', await h.request('GET', '/v1/account', { key }));
    // Prices, on an account of its own (this one's requests are counted against RATE_LIMIT_MAX).
    const p = await h.customer();
    check('GET', '/v1/pricing', await h.request('GET', '/v1/pricing?to=%2B447911123456', { key: p.key }));
    check('GET', '/v1/pricing', await h.request('GET', '/v1/pricing?to=nope', { key: p.key }));
    check('POST', '/v1/sms/quote', await h.request('POST', '/v1/sms/quote', { key: p.key, body: send }));
    check('POST', '/v1/sms/quote', await h.request('POST', '/v1/sms/quote', { key: p.key, body: { ...send, to: 'nope' } }));
    await assignNumber(h.ctx, (await h.request('GET', '/v1/account', { key })).json().data.id, '+447700900777', 'Support');
    check('GET', '/v1/numbers', await h.request('GET', '/v1/numbers', { key }));
    check('PUT', '/v1/account/events-url', await h.request('PUT', '/v1/account/events-url', { key, body: { url: 'https://127.0.0.1:9/events' } }));
    check('PUT', '/v1/account/events-url', await h.request('PUT', '/v1/account/events-url', { key, body: { url: 'http://127.0.0.1:9/events' } }));
    check('POST', '/v1/simulator/inbound', await h.request('POST', '/v1/simulator/inbound', { key, body: { from: '+447911123456', to: '+447700900777', message: 'Hi' } }));
    check('POST', '/v1/simulator/inbound', await h.request('POST', '/v1/simulator/inbound', { key, body: { from: '+447911123456', to: '+447700900778', message: 'Hi' } }));
    check('GET', '/v1/sms/inbound', await h.request('GET', '/v1/sms/inbound?limit=5', { key }));
    check('POST', '/v1/opt-outs', await h.request('POST', '/v1/opt-outs', { key, body: { phone: '+447911000123' } }));
    check('POST', '/v1/opt-outs', await h.request('POST', '/v1/opt-outs', { key, body: { phone: '+447911000123' } }));
    check('POST', '/v1/opt-outs', await h.request('POST', '/v1/opt-outs', { key, body: { phone: 'nope' } }));
    check('GET', '/v1/opt-outs', await h.request('GET', '/v1/opt-outs', { key }));
    check('POST', '/v1/sms/send', await h.request('POST', '/v1/sms/send', { key, body: { ...send, to: '+447911000123' } }));
    check('DELETE', '/v1/opt-outs/{phone}', await h.request('DELETE', '/v1/opt-outs/%2B447911000123', { key }));
    check('DELETE', '/v1/opt-outs/{phone}', await h.request('DELETE', '/v1/opt-outs/%2B447911000123', { key }));
    check('GET', '/v1/sms/inbound', await h.request('GET', '/v1/sms/inbound?since=nope', { key }));
    check('DELETE', '/v1/account/events-url', await h.request('DELETE', '/v1/account/events-url', { key }));
    // A new window of RATE_LIMIT_MAX for the requests that follow.
    h.clock.advance(1_000);
    check('GET', '/v1/account/quiet-hours', await h.request('GET', '/v1/account/quiet-hours', { key }));
    check('PUT', '/v1/account/quiet-hours', await h.request('PUT', '/v1/account/quiet-hours', { key, body: { start: '09:00', end: '20:00' } }));
    check('PUT', '/v1/account/quiet-hours', await h.request('PUT', '/v1/account/quiet-hours', { key, body: { start: '07:00', end: '22:00' } }));

    await h.request('PUT', '/v1/account/events-url', { key, body: { url: 'https://127.0.0.1:9/events' } });
    check('POST', '/v1/simulator/inbound', await h.request('POST', '/v1/simulator/inbound', { key, body: { from: '+447911123456', to: '+447700900777', message: 'Hi' } }));

    // Verify (DECISIONS.md §14), in a rate-limit window of its own.
    h.clock.advance(1_000);
    const vs = await h.request('POST', '/v1/verify/services', { key, body: { name: 'Acme', from: 'Acme' } });
    check('POST', '/v1/verify/services', vs);
    assert.equal(vs.statusCode, 201, vs.body);
    const vsId = vs.json().data.id as string;
    check('GET', '/v1/verify/services', await h.request('GET', '/v1/verify/services', { key }));
    check('GET', '/v1/verify/services/{id}', await h.request('GET', `/v1/verify/services/${vsId}`, { key }));
    check('PATCH', '/v1/verify/services/{id}', await h.request('PATCH', `/v1/verify/services/${vsId}`, { key, body: { code_length: 8 } }));
    const ver = await h.request('POST', `/v1/verify/services/${vsId}/verifications`, { key, body: { to: '+447400100200' } });
    assert.equal(ver.statusCode, 201, ver.body);
    check('POST', '/v1/verify/services/{id}/verifications', ver);
    check('GET', '/v1/verify/verifications/{id}', await h.request('GET', `/v1/verify/verifications/${ver.json().data.id}`, { key }));
    check('POST', '/v1/verify/services/{id}/checks', await h.request('POST', `/v1/verify/services/${vsId}/checks`, { key, body: { to: '+447400100200', code: '00000000' } }));
    check('POST', '/v1/verify/verifications/{id}/cancel', await h.request('POST', `/v1/verify/verifications/${ver.json().data.id}/cancel`, { key }));
    h.clock.advance(1_000);
    check('POST', '/v1/verify/safe-list', await h.request('POST', '/v1/verify/safe-list', { key, body: { entry: '+4474001' } }));
    check('GET', '/v1/verify/safe-list', await h.request('GET', '/v1/verify/safe-list', { key }));
    check('DELETE', '/v1/verify/safe-list/{entry}', await h.request('DELETE', '/v1/verify/safe-list/%2B4474001', { key }));
    check('GET', '/v1/verify/blocks', await h.request('GET', '/v1/verify/blocks', { key }));
    check('DELETE', '/v1/verify/services/{id}', await h.request('DELETE', `/v1/verify/services/${vsId}`, { key }));

    const events = await h.request('GET', '/v1/webhooks/events', { key });
    check('GET', '/v1/webhooks/events', events);
    const undelivered = (events.json().data as { id: string; status: string }[]).find((e) => e.status === 'undelivered');
    assert.ok(undelivered, 'an event to the unreachable receiver is undelivered');
    check('POST', '/v1/webhooks/events/{id}/retry', await h.request('POST', `/v1/webhooks/events/${undelivered.id}/retry`, { key }));
    check('POST', '/v1/webhooks/events/{id}/retry', await h.request('POST', '/v1/webhooks/events/evt_nope/retry', { key }));

    // The rate limit, on an account of its own.
    const busy = await h.customer();
    let limited: LightMyRequestResponse | undefined;
    for (let i = 0; i < 30 && !limited; i++) {
      const res = await h.request('GET', '/v1/account', { key: busy.key });
      if (res.statusCode === 429) limited = res;
    }
    assert.ok(limited, 'the rate limit was reached');
    check('GET', '/v1/account', limited);

    const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    assert.deepEqual(documented.filter((op) => !succeeded.has(op)), [], 'every documented operation was checked with a real success');
  });

  test('real webhook payloads match the webhooks schema', async () => {
    const { key } = await h.customer({ credits: 10 });
    const callback_url = 'https://127.0.0.1:9/hooks';
    await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911120000', from: 'Acme', message: 'fails', callback_url } });
    await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', callback_url, messages: [{ to: '+447911123456', message: 'delivered' }] } });
    await h.workers.drain();
    h.clock.advance(2000);
    await h.workers.drain();
    const all = await h.ctx.store.db.selectFrom('webhook_events').select(['event', 'payload', 'message_id']).execute();
    // Account events (the inbound message of the test before) have their own schemas.
    const rows = all.filter((r) => r.message_id !== null);
    const kinds = new Set(rows.map((r) => r.event));
    assert.deepEqual([...kinds].sort(), ['sms.delivered', 'sms.failed', 'sms.sent']);
    const received = all.filter((r) => r.event === 'sms.received');
    assert.ok(received.length > 0, 'an sms.received event was raised');
    const validateReceived = ajv.getSchema('openapi#/components/schemas/SmsReceivedEvent');
    assert.ok(validateReceived);
    for (const row of received) assert.ok(validateReceived(JSON.parse(row.payload)), ajv.errorsText(validateReceived.errors));
    const optOuts = all.filter((r) => r.event.startsWith('recipient.'));
    assert.deepEqual([...new Set(optOuts.map((r) => r.event))].sort(), ['recipient.opted_in', 'recipient.opted_out']);
    const validateOptOut = ajv.getSchema('openapi#/components/schemas/OptOutEvent');
    assert.ok(validateOptOut);
    for (const row of optOuts) assert.ok(validateOptOut(JSON.parse(row.payload)), ajv.errorsText(validateOptOut.errors));
    const validate = ajv.getSchema('openapi#/components/schemas/WebhookEvent');
    assert.ok(validate);
    for (const row of rows) {
      const payload = JSON.parse(row.payload);
      assert.ok(validate(payload), `${row.event}: ${ajv.errorsText(validate.errors)}`);
      assert.equal(payload.event, row.event);
    }
  });
});
