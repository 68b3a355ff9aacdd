/** The operator console's Numbers page: assign, release, refusals shown with their reason, the unrouted list. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { harness, type Harness } from '../helpers/harness.ts';
import { DashboardClient } from '../helpers/dashboard-client.ts';
import { createOperator } from '../../src/services/auth/operators.ts';
import { listNumbers } from '../../src/services/numbers/numbers.ts';
import { simulateInbound } from '../../src/services/inbound/inbound.ts';

describe('operator console: numbers and unrouted messages', () => {
  let h: Harness;
  let ops: DashboardClient;
  before(async () => {
    h = await harness();
    await createOperator(h.ctx, 'ops@example.com', 'operator password');
    ops = new DashboardClient(h.app);
    const form = await ops.get('/operator/login');
    const res = await ops.post('/operator/login', { email: 'ops@example.com', password: 'operator password' }, form.body);
    assert.equal(res.statusCode, 303);
  });
  after(() => h.close());

  test('assign, refuse a taken or malformed number, release; unrouted messages listed', async () => {
    const { accountId, key } = await h.customer();
    const page = await ops.get('/operator/numbers');
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /No numbers are assigned/);
    assert.match(page.body, /href="\/operator\/numbers"[^>]*aria-current="page"/);

    const assigned = await ops.post('/operator/numbers', { account: accountId, number: '+44 7700 900700', label: 'Support' }, page.body);
    assert.equal(assigned.statusCode, 303);
    const shown = await ops.get(String(assigned.headers.location));
    assert.match(shown.body, /\+447700900700 is assigned to acc_/);
    assert.match(shown.body, new RegExp(`<code>${accountId}</code>`));
    assert.equal((await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: '+447700900700', message: 'hi' } })).statusCode, 200);

    const taken = await ops.post('/operator/numbers', { account: accountId, number: '+447700900700', label: '' }, page.body);
    assert.equal(taken.statusCode, 409);
    assert.match(taken.body, /already assigned/);
    const bad = await ops.post('/operator/numbers', { account: accountId, number: 'abc', label: '' }, page.body);
    assert.equal(bad.statusCode, 400);
    const nobody = await ops.post('/operator/numbers', { account: 'acc_none', number: '+447700900701', label: '' }, page.body);
    assert.equal(nobody.statusCode, 404);

    const released = await ops.post('/operator/numbers/release', { number: '+447700900700' }, page.body);
    assert.equal(released.statusCode, 303);
    assert.deepEqual(await listNumbers(h.ctx), []);
    assert.equal((await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: '+447700900700', message: 'hi' } })).json().code, 'invalid_sender_id');

    await simulateInbound(h.ctx, { from: '+447911123456', to: '+447700900700', message: 'Anyone <there>?' });
    const list = await ops.get('/operator/numbers');
    assert.match(list.body, /Anyone &lt;there&gt;\?/);
    const forged = await ops.post('/operator/numbers', { account: accountId, number: '+447700900702', label: '' });
    assert.equal(forged.statusCode, 403);
  });
});
