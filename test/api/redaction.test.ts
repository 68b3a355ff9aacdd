/**
 * Redaction through the API (DECISIONS.md §13): `POST /v1/sms/{id}/redact`,
 * `POST /v1/sms/batches/{batch_id}/redact` and `POST /v1/sms/inbound/{id}/redact` take the text
 * and the full number out of the message, its delivery reports and its events' stored payloads,
 * answer the same on a repeat, and refuse a message that is not final yet with 409 not_redactable.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { addCredits } from '../../src/services/accounts/accounts.ts';
import { createApiKey } from '../../src/services/keys/api-keys.ts';
import { assignNumber } from '../../src/services/numbers/numbers.ts';
import { approveSenderId, registerSenderId } from '../../src/services/sender-ids/sender-ids.ts';
import { DashboardClient } from '../helpers/dashboard-client.ts';
import { harness, type Harness } from '../helpers/harness.ts';

const CALLBACK = 'https://127.0.0.1:9/callback';

describe('redaction', () => {
  let h: Harness;
  before(async () => {
    h = await harness({ WEBHOOK_RETRY_DELAYS_MS: '0' });
  });
  after(() => h.close());

  const stored = (id: string) => h.ctx.store.db.selectFrom('messages').select(['body', 'recipient', 'status', 'segments']).where('id', '=', id).executeTakeFirstOrThrow();
  const events = async (key: string, messageId: string) => (await h.request('GET', `/v1/webhooks/events?message_id=${messageId}`, { key })).json().data as { payload: Record<string, unknown> }[];
  const report = async (key: string, messageId: string) => (await h.request('GET', `/v1/sms/delivery-reports?message_id=${messageId}`, { key })).json().data[0];

  /** Sends and lets the simulator deliver it (SIM_DELIVERY_DELAY_MS is 1 s on the harness's clock). */
  async function delivered(key: string, to: string, message: string): Promise<string> {
    const res = await h.request('POST', '/v1/sms/send', { key, body: { to, from: 'Acme', message, callback_url: CALLBACK } });
    assert.equal(res.statusCode, 200, res.body);
    await h.workers.drain();
    h.clock.advance(1000);
    await h.workers.drain();
    return res.json().message_id;
  }

  test('a delivered message: text gone, number masked in the message, its report and its events; a repeat answers the same', async () => {
    const { key, accountId } = await h.customer();
    const id = await delivered(key, '+447700900123', 'your code is 834201');
    const creditsBefore = (await h.request('GET', '/v1/account/balance', { key })).json();
    assert.equal((await report(key, id)).to, '+447700900123');
    assert.ok((await events(key, id)).length >= 2, 'sms.sent and sms.delivered are stored');

    const res = await h.request('POST', `/v1/sms/${id}/redact`, { key });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { status: 'success', data: { redacted: [id] } });

    const row = await stored(id);
    assert.equal(row.body, '');
    assert.equal(row.recipient, '+44770090XXXX');
    assert.equal(row.status, 'delivered', 'the status stays');
    const r = await report(key, id);
    assert.equal(r.to, '+44770090XXXX');
    assert.equal(r.status, 'delivered');
    const stored_events = await events(key, id);
    assert.ok(stored_events.length >= 2);
    for (const e of stored_events) {
      assert.equal(e.payload.to, '+44770090XXXX');
      assert.doesNotMatch(JSON.stringify(e.payload), /900123|834201/);
    }
    // Nothing else of the account changed: balance and ledger are the same.
    assert.deepEqual((await h.request('GET', '/v1/account/balance', { key })).json(), creditsBefore);
    const raw = await h.ctx.store.db.selectFrom('webhook_events').select('payload').where('account_id', '=', accountId).execute();
    assert.ok(raw.every((e) => !e.payload.includes('+447700900123')), 'a stored payload still has the number');

    const again = await h.request('POST', `/v1/sms/${id}/redact`, { key });
    assert.equal(again.statusCode, 200);
    assert.deepEqual(again.json(), res.json());
    assert.equal((await stored(id)).recipient, '+44770090XXXX', 'masked once, not again');
  });

  test('not final yet (pending, sent, scheduled): 409 not_redactable and nothing changes; unknown or another account’s: 404', async () => {
    const { key } = await h.customer();
    const pending = (await h.request('POST', '/v1/sms/send', { key, body: { to: '+447700900124', from: 'Acme', message: 'still pending' } })).json().message_id;
    const refused = await h.request('POST', `/v1/sms/${pending}/redact`, { key });
    assert.equal(refused.statusCode, 409);
    assert.equal(refused.json().code, 'not_redactable');
    assert.match(refused.json().message, /pending/);
    assert.deepEqual({ ...(await stored(pending)) }, { body: 'still pending', recipient: '+447700900124', status: 'pending', segments: 1 });
    await h.workers.drain();
    assert.equal((await stored(pending)).status, 'sent');
    assert.equal((await h.request('POST', `/v1/sms/${pending}/redact`, { key })).json().code, 'not_redactable', 'sent is not final');

    const sendAt = new Date(h.clock.now() + 3_600_000).toISOString();
    const scheduled = (await h.request('POST', '/v1/sms/send', { key, body: { to: '+447700900125', from: 'Acme', message: 'later', send_at: sendAt } })).json().message_id;
    assert.equal((await h.request('POST', `/v1/sms/${scheduled}/redact`, { key })).json().code, 'not_redactable');
    // Canceled is final: it can be redacted.
    assert.equal((await h.request('POST', `/v1/sms/${scheduled}/cancel`, { key })).statusCode, 200);
    assert.equal((await h.request('POST', `/v1/sms/${scheduled}/redact`, { key })).statusCode, 200);
    assert.equal((await stored(scheduled)).body, '');

    const other = await h.customer();
    for (const [url, who] of [
      [`/v1/sms/msg_nope/redact`, key],
      [`/v1/sms/${scheduled}/redact`, other.key],
      [`/v1/sms/${'x'.repeat(200)}/redact`, key],
      [`/v1/sms/batches/bat_nope/redact`, key],
    ] as const) {
      const res = await h.request('POST', url, { key: who });
      assert.equal(res.statusCode, 404, url);
      assert.equal(res.json().code, 'not_found');
    }
    const readOnly = await h.customer({ scopes: 'reports:read' });
    assert.equal((await h.request('POST', `/v1/sms/msg_nope/redact`, { key: readOnly.key })).statusCode, 403);
  });

  test('a batch is redacted whole once every message is final, or not at all', async () => {
    const { key } = await h.customer();
    const to = ['+447700900201', '+447700900202', '+14155550203'];
    const res = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', callback_url: CALLBACK, messages: to.map((n, i) => ({ to: n, message: `secret ${i}` })) } });
    assert.equal(res.statusCode, 200, res.body);
    const batchId = res.json().batch_id as string;
    const ids = (res.json().messages as { message_id: string }[]).map((m) => m.message_id);
    await h.workers.drain();
    const early = await h.request('POST', `/v1/sms/batches/${batchId}/redact`, { key });
    assert.equal(early.statusCode, 409);
    assert.equal(early.json().code, 'not_redactable');
    assert.match(early.json().message, /3 of the batch's 3 messages/);
    for (const id of ids) assert.match((await stored(id)).body, /^secret/);

    h.clock.advance(1000);
    await h.workers.drain();
    const done = await h.request('POST', `/v1/sms/batches/${batchId}/redact`, { key });
    assert.equal(done.statusCode, 200, done.body);
    assert.deepEqual([...done.json().data.redacted].sort(), [...ids].sort());
    const rows = await Promise.all(ids.map(stored));
    assert.deepEqual(
      rows.map((r) => [r.body, r.recipient]),
      [
        ['', '+44770090XXXX'],
        ['', '+44770090XXXX'],
        ['', '+1415555XXXX'],
      ],
    );
    const batchReports = (await h.request('GET', `/v1/sms/delivery-reports?batch_id=${batchId}`, { key })).json().data as { to: string }[];
    assert.equal(batchReports.length, 3);
    assert.ok(batchReports.every((r) => r.to.endsWith('XXXX')));
    for (const id of ids) for (const e of await events(key, id)) assert.match(String(e.payload.to), /XXXX$/);
    assert.deepEqual((await h.request('POST', `/v1/sms/batches/${batchId}/redact`, { key })).json(), done.json());
  });

  test('an inbound message: text and sender gone from the inbox and its events; its opt-out still blocks sends', async () => {
    const c = await h.customer();
    await assignNumber(h.ctx, c.accountId, '+447700900777');
    assert.equal((await h.request('PUT', '/v1/account/events-url', { key: c.key, body: { url: 'https://127.0.0.1:9/events' } })).statusCode, 200);
    const sim = await h.request('POST', '/v1/simulator/inbound', { key: c.key, body: { from: '+447911123456', to: '+447700900777', message: 'STOP' } });
    assert.equal(sim.statusCode, 201, sim.body);
    const inboundId = sim.json().data.id as string;
    const inboundKey = (await h.customer({ scopes: 'inbound:read' })).key;
    const notMine = await h.request('POST', `/v1/sms/inbound/${inboundId}/redact`, { key: inboundKey });
    assert.equal(notMine.statusCode, 404, 'another account’s inbound message');
    const sendOnly = await h.customer({ scopes: 'sms:send' });
    assert.equal((await h.request('POST', `/v1/sms/inbound/${inboundId}/redact`, { key: sendOnly.key })).statusCode, 403);

    const res = await h.request('POST', `/v1/sms/inbound/${inboundId}/redact`, { key: c.key });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { status: 'success', data: { redacted: [inboundId] } });
    const inbox = (await h.request('GET', '/v1/sms/inbound', { key: c.key })).json().data as { id: string; from: string; to: string; message: string }[];
    const listed = inbox.find((m) => m.id === inboundId)!;
    assert.equal(listed.from, '+44791112XXXX');
    assert.equal(listed.message, '');
    assert.equal(listed.to, '+447700900777', 'the account’s own number stays');
    const payloads = await h.ctx.store.db.selectFrom('webhook_events').select(['event', 'payload']).where('inbound_id', '=', inboundId).execute();
    assert.ok(payloads.some((e) => e.event === 'sms.received'));
    for (const e of payloads) assert.ok(!e.payload.includes('+447911123456') && !e.payload.includes('STOP'), `${e.event}: ${e.payload}`);
    assert.deepEqual((await h.request('POST', `/v1/sms/inbound/${inboundId}/redact`, { key: c.key })).json(), res.json());

    const blocked = await h.request('POST', '/v1/sms/send', { key: c.key, body: { to: '+447911123456', from: 'Acme', message: 'hello again' } });
    assert.equal(blocked.statusCode, 400);
    assert.equal(blocked.json().code, 'recipient_opted_out');
  });

  test('the dashboard: a Redact button on a final message, a refusal on one still on its way, and what it shows after', async () => {
    const client = new DashboardClient(h.app);
    const form = await client.get('/dashboard/signup');
    await client.post('/dashboard/signup', { name: 'Redact Ltd', email: 'redact@example.com', password: 'correct horse battery' }, form.body);
    const owner = await h.ctx.store.db.selectFrom('owners').selectAll().where('email', '=', 'redact@example.com').executeTakeFirstOrThrow();
    await addCredits(h.ctx, owner.account_id, 10, 'top-up');
    await approveSenderId(h.ctx, (await registerSenderId(h.ctx, owner.account_id, 'Acme')).id);
    const key = (await createApiKey(h.ctx, owner.account_id, { label: 'k' })).key;
    const id = await delivered(key, '+447700900321', 'dashboard secret');
    const pending = (await h.request('POST', '/v1/sms/send', { key, body: { to: '+447700900322', from: 'Acme', message: 'on its way' } })).json().message_id;

    const onItsWay = await client.get(`/dashboard/messages/${pending}`);
    assert.match(onItsWay.body, /can be redacted once it is delivered, failed or canceled/);
    assert.doesNotMatch(onItsWay.body, new RegExp(`/dashboard/messages/${pending}/redact`));
    const refused = await client.post(`/dashboard/messages/${pending}/redact`, {}, onItsWay.body);
    assert.equal(refused.statusCode, 409);
    assert.match(refused.body, /class="alert error"[^>]*>The message is pending/);
    assert.equal((await stored(pending)).body, 'on its way');

    const page = await client.get(`/dashboard/messages/${id}`);
    assert.match(page.body, /\+447700900321/);
    assert.match(page.body, new RegExp(`action="/dashboard/messages/${id}/redact"`));
    const withoutToken = await client.post(`/dashboard/messages/${id}/redact`, {});
    assert.equal(withoutToken.statusCode, 403, 'a form without the session’s CSRF token is refused');
    assert.equal((await stored(id)).body, 'dashboard secret');
    const done = await client.post(`/dashboard/messages/${id}/redact`, {}, page.body);
    assert.equal(done.statusCode, 200, done.body);
    assert.match(done.body, /The message is redacted\./);
    assert.match(done.body, /\+44770090XXXX/);
    assert.doesNotMatch(done.body, /900321/);
    assert.doesNotMatch(done.body, /action="[^"]*\/redact"/, 'no button once redacted');
    assert.deepEqual({ body: (await stored(id)).body, recipient: (await stored(id)).recipient }, { body: '', recipient: '+44770090XXXX' });
    const list = await client.get('/dashboard/messages');
    assert.doesNotMatch(list.body, /900321/);
    // Another account's message: not found, whatever the form.
    const other = await h.customer();
    const theirs = await delivered(other.key, '+447700900323', 'not yours');
    assert.equal((await client.post(`/dashboard/messages/${theirs}/redact`, {}, page.body)).statusCode, 404);
    assert.equal((await stored(theirs)).body, 'not yours');
  });
});
