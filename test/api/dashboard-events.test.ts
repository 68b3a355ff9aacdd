/** Settings → Numbers and events in the owner's dashboard: the account's numbers and its events URL. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { harness, type Harness } from '../helpers/harness.ts';
import { DashboardClient } from '../helpers/dashboard-client.ts';
import { getAccount } from '../../src/services/accounts/accounts.ts';
import { assignNumber } from '../../src/services/numbers/numbers.ts';
import { simulateInbound } from '../../src/services/inbound/inbound.ts';

describe('dashboard: numbers and events URL', () => {
  let h: Harness;
  let client: DashboardClient;
  let accountId: string;

  before(async () => {
    h = await harness();
    client = new DashboardClient(h.app);
    const form = await client.get('/dashboard/signup');
    await client.post('/dashboard/signup', { name: 'Events Ltd', email: 'events@example.com', password: 'correct horse battery' }, form.body);
    accountId = (await h.ctx.store.db.selectFrom('owners').selectAll().executeTakeFirstOrThrow()).account_id;
  });
  after(() => h.close());

  test('lists the account’s numbers; saves, refuses and clears the events URL', async () => {
    const empty = await client.get('/dashboard/settings/events');
    assert.equal(empty.statusCode, 200);
    assert.match(empty.body, /No numbers yet/);
    assert.match(empty.body, /Not set: these events are not sent/);
    assert.match(empty.body, /href="\/dashboard\/settings\/events" aria-current="page"/);

    await assignNumber(h.ctx, accountId, '+447700900600', 'Support <line>');
    const listed = await client.get('/dashboard/settings/events');
    assert.match(listed.body, /<code>\+447700900600<\/code>/);
    assert.match(listed.body, /Support &lt;line&gt;/);

    const refused = await client.post('/dashboard/settings/events', { url: 'http://127.0.0.1/hook' }, listed.body);
    assert.equal(refused.statusCode, 400);
    assert.match(refused.body, /must use https/);
    assert.match(refused.body, /value="http:\/\/127.0.0.1\/hook"/, 'what was typed is kept');
    assert.equal((await getAccount(h.ctx, accountId)).events_url, null);

    const saved = await client.post('/dashboard/settings/events', { url: 'https://127.0.0.1:9/events' }, listed.body);
    assert.equal(saved.statusCode, 303);
    assert.equal((await getAccount(h.ctx, accountId)).events_url, 'https://127.0.0.1:9/events');
    const shown = await client.get(String(saved.headers.location));
    assert.match(shown.body, /The events URL was saved/);
    assert.match(shown.body, /Current: <code>https:\/\/127.0.0.1:9\/events<\/code>/);

    const cleared = await client.post('/dashboard/settings/events/clear', {}, shown.body);
    assert.equal(cleared.statusCode, 303);
    assert.equal((await getAccount(h.ctx, accountId)).events_url, null);
  });

  test('the reply to HELP: edited, used by the keyword, emptied back to the default', async () => {
    const page = await client.get('/dashboard/settings/events');
    assert.match(page.body, /Events Ltd: reply STOP to unsubscribe\./);
    const tooLong = await client.post('/dashboard/settings/events/help', { help_text: 'x'.repeat(321) }, page.body);
    assert.equal(tooLong.statusCode, 400);
    const saved = await client.post('/dashboard/settings/events/help', { help_text: ' Events Ltd: call 0800 000 000. Reply STOP to unsubscribe. ' }, page.body);
    assert.equal(saved.statusCode, 303);
    assert.equal((await getAccount(h.ctx, accountId)).help_text, 'Events Ltd: call 0800 000 000. Reply STOP to unsubscribe.');
    await assignNumber(h.ctx, accountId, '+447700900601');
    await simulateInbound(h.ctx, { from: '+447911123456', to: '+447700900601', message: 'help' });
    const reply = await h.ctx.store.db.selectFrom('messages').select(['body', 'sender']).where('account_id', '=', accountId).executeTakeFirstOrThrow();
    assert.deepEqual({ ...reply }, { body: 'Events Ltd: call 0800 000 000. Reply STOP to unsubscribe.', sender: '+447700900601' });
    await client.post('/dashboard/settings/events/help', { help_text: '' }, page.body);
    assert.equal((await getAccount(h.ctx, accountId)).help_text, null);
  });

  test('a form without the CSRF token changes nothing', async () => {
    const forged = await client.post('/dashboard/settings/events', { url: 'https://127.0.0.1:9/forged' });
    assert.equal(forged.statusCode, 403);
    assert.equal((await getAccount(h.ctx, accountId)).events_url, null);
  });
});
