/**
 * The overview's "Getting started" checklist of a new owner: it starts with every step to do and
 * the 0-credit hint, and ticks each step off from what the account really did.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { harness, type Harness } from '../helpers/harness.ts';
import { DashboardClient } from '../helpers/dashboard-client.ts';
import { addCredits } from '../../src/services/accounts/accounts.ts';
import { approveSenderId, registerSenderId } from '../../src/services/sender-ids/sender-ids.ts';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.ts';
import { createWorkers, type Workers } from '../../src/workers/workers.ts';
import { makeTestCa, startReceiver, type Receiver, type TestCa } from './webhooks-receiver.ts';

function steps(page: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of page.matchAll(/data-step="([a-z-]+)" data-state="([a-z]+)"/g)) out[m[1]!] = m[2]!;
  return out;
}

describe('onboarding checklist on the overview', () => {
  let h: Harness;
  let ca: TestCa;
  let receiver: Receiver;
  let workers: Workers;
  before(async () => {
    ca = makeTestCa();
    receiver = await startReceiver(ca, () => ({ status: 200 }));
    h = await harness({ WEBHOOK_ALLOW_PRIVATE: 'true', SIM_DELIVERY_DELAY_MS: '0' });
    const dispatcher = new WebhookDispatcher({ timeoutMs: 2000, allowPrivate: true, ca: ca.ca, maxSocketsPerHost: 2 });
    workers = createWorkers(h.ctx, h.carrier, { webhook: { dispatcher, perHost: 2 } });
  });
  after(async () => {
    await workers.stop();
    await h.close();
    await receiver.close();
    ca.cleanup();
  });

  test('ticks itself off step by step, then makes way for the statistics', async () => {
    const client = new DashboardClient(h.app);
    const form = await client.get('/dashboard/signup');
    assert.equal((await client.post('/dashboard/signup', { name: 'Newcomer', email: 'new@example.com', password: 'a long enough password' }, form.body)).statusCode, 303);

    let overview = (await client.get('/dashboard')).body;
    const accountId = /Account <code>([^<]+)<\/code>/.exec(overview)![1]!;
    assert.match(overview, /Getting started: 0 of 5 done/);
    assert.deepEqual(steps(overview), { credits: 'todo', 'sender-id': 'todo', 'api-key': 'todo', 'first-send': 'todo', webhook: 'todo' });
    assert.ok(overview.includes(`pigeon credits add ${accountId} AMOUNT`), 'a new owner with 0 credits is told how credits arrive');
    assert.match(overview, /carrier simulator/);

    await addCredits(h.ctx, accountId, 50, 'welcome');
    const sender = await registerSenderId(h.ctx, accountId, 'Acme');
    overview = (await client.get('/dashboard')).body;
    assert.equal(steps(overview).credits, 'done');
    assert.equal(steps(overview)['sender-id'], 'waiting', 'pending review');
    await approveSenderId(h.ctx, sender.id);

    const keys = await client.get('/dashboard/settings/api-keys');
    const nonce = /name="nonce" value="([^"]+)"/.exec(keys.body)![1]!;
    const created = await client.post('/dashboard/settings/api-keys', { label: 'first', scopes: ['sms:send'], nonce }, keys.body);
    const key = /id="new-key">(pk_live_[0-9A-Za-z]+)</.exec(created.body)![1]!;
    overview = (await client.get('/dashboard')).body;
    assert.deepEqual(steps(overview), { credits: 'done', 'sender-id': 'done', 'api-key': 'done', 'first-send': 'todo', webhook: 'todo' });
    assert.match(overview, /Getting started: 3 of 5 done/);

    const send = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'test', callback_url: receiver.url('/hook') } });
    assert.equal(send.statusCode, 200, send.body);
    assert.equal(steps((await client.get('/dashboard')).body)['first-send'], 'done');
    assert.equal(steps((await client.get('/dashboard')).body).webhook, 'todo', 'not until the receiver answered');

    await workers.drain();
    assert.ok(receiver.received.length > 0);
    overview = (await client.get('/dashboard')).body;
    assert.doesNotMatch(overview, /Getting started/, 'all done: the checklist is gone');
    assert.match(overview, /Credit balance/);
  });
});
