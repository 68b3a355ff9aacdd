/** The owner's Inbox (conversations, search) and Opt-outs (list, add, remove, keyword ones kept) pages. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { harness, type Harness } from '../helpers/harness.ts';
import { DashboardClient } from '../helpers/dashboard-client.ts';
import { addCredits } from '../../src/services/accounts/accounts.ts';
import { createApiKey } from '../../src/services/keys/api-keys.ts';
import { assignNumber } from '../../src/services/numbers/numbers.ts';
import { simulateInbound } from '../../src/services/inbound/inbound.ts';

describe('dashboard: inbox and opt-outs', () => {
  let h: Harness;
  let client: DashboardClient;
  let accountId: string;
  let key: string;

  before(async () => {
    h = await harness();
    client = new DashboardClient(h.app);
    const form = await client.get('/dashboard/signup');
    await client.post('/dashboard/signup', { name: 'Inbox Ltd', email: 'inbox@example.com', password: 'correct horse battery' }, form.body);
    accountId = (await h.ctx.store.db.selectFrom('owners').selectAll().executeTakeFirstOrThrow()).account_id;
    await addCredits(h.ctx, accountId, 50);
    key = (await createApiKey(h.ctx, accountId, { label: 'k' })).key;
    await assignNumber(h.ctx, accountId, '+447700900650');
  });
  after(() => h.close());

  test('inbox: one conversation per correspondent, sent and received newest first, searchable', async () => {
    const empty = await client.get('/dashboard/inbox');
    assert.match(empty.body, /No messages received yet/);
    await simulateInbound(h.ctx, { from: '+447911000101', to: '+447700900650', message: 'Is my order <ready>?' });
    h.clock.advance(1000);
    const sent = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911000101', from: '+447700900650', message: 'Yes, collect it today.' } });
    assert.equal(sent.statusCode, 200, sent.body);
    h.clock.advance(1000);
    await simulateInbound(h.ctx, { from: '+447911000102', to: '+447700900650', message: 'Opening hours?' });

    const list = await client.get('/dashboard/inbox');
    const order = [...list.body.matchAll(/href="\/dashboard\/inbox\/(%2B\d+)"/g)].map((m) => decodeURIComponent(m[1]!));
    assert.deepEqual(order, ['+447911000102', '+447911000101']);
    const found = await client.get('/dashboard/inbox?q=order');
    assert.deepEqual([...found.body.matchAll(/href="\/dashboard\/inbox\/(%2B\d+)"/g)].map((m) => decodeURIComponent(m[1]!)), ['+447911000101']);
    assert.match((await client.get('/dashboard/inbox?q=%25')).body, /Nothing matches/, 'a % is searched for, not a wildcard');

    const talk = await client.get('/dashboard/inbox/%2B447911000101');
    assert.equal(talk.statusCode, 200);
    const sentAt = talk.body.indexOf('Yes, collect it today.');
    const receivedAt = talk.body.indexOf('Is my order &lt;ready&gt;?');
    assert.ok(sentAt > 0 && receivedAt > sentAt, 'newest first, escaped');
    assert.doesNotMatch(talk.body, /Opening hours/);
  });

  test('opt-outs: add, refused input, remove with a confirm; a STOP is listed but not removable', async () => {
    const page = await client.get('/dashboard/opt-outs');
    assert.match(page.body, /Nobody has opted out/);
    const added = await client.post('/dashboard/opt-outs', { phone: '+447911000201' }, page.body);
    assert.equal(added.statusCode, 303);
    const bad = await client.post('/dashboard/opt-outs', { phone: '07911' }, page.body);
    assert.equal(bad.statusCode, 400);
    assert.match(bad.body, /not a valid E\.164 number/);
    await simulateInbound(h.ctx, { from: '+447911000202', to: '+447700900650', message: 'STOP' });
    const listed = await client.get('/dashboard/opt-outs');
    assert.match(listed.body, /Opt-outs \(2\)/);
    assert.match(listed.body, /\+447911000202<\/td><td data-label="How">replied STOP/);
    assert.match(listed.body, /Only their START lifts it/);
    assert.match(listed.body, /data-confirm="Remove \+447911000201 from the opt-out list\?/);
    assert.doesNotMatch(listed.body, /aria-label="Remove \+447911000202"/);
    assert.equal((await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911000201', from: '+447700900650', message: 'x' } })).json().code, 'recipient_opted_out');
    const removed = await client.post('/dashboard/opt-outs/remove', { phone: '+447911000201' }, listed.body);
    assert.equal(removed.statusCode, 303);
    const forced = await client.post('/dashboard/opt-outs/remove', { phone: '+447911000202' }, listed.body);
    assert.equal(forced.statusCode, 409);
    assert.equal((await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911000201', from: '+447700900650', message: 'x' } })).statusCode, 200);
    const nav = await client.get('/dashboard/opt-outs');
    assert.match(nav.body, /href="\/dashboard\/opt-outs"[^>]*aria-current="page"/);
  });
});
