/** Settings → Twilio-compatible API: credentials made and rotated there (token shown once), SMS URLs per number. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { harness, type Harness } from '../helpers/harness.ts';
import { DashboardClient } from '../helpers/dashboard-client.ts';
import { assignNumber, listNumbers } from '../../src/services/numbers/numbers.ts';

describe('dashboard: Twilio-compatible API settings', () => {
  let h: Harness;
  let client: DashboardClient;
  let accountId: string;
  /** The credentials made, the token before the rotation and the one after. */
  let sid = '';
  let token = '';
  let next = '';

  before(async () => {
    h = await harness();
    client = new DashboardClient(h.app);
    const form = await client.get('/dashboard/signup');
    await client.post('/dashboard/signup', { name: 'Twilio Movers', email: 'movers@example.com', password: 'correct horse battery' }, form.body);
    accountId = (await h.ctx.store.db.selectFrom('owners').selectAll().executeTakeFirstOrThrow()).account_id;
    await assignNumber(h.ctx, accountId, '+447700900660');
  });
  after(() => h.close());

  const basic = (sid: string, token: string) => ({ authorization: `Basic ${Buffer.from(`${sid}:${token}`).toString('base64')}` });

  test('credentials are created, shown once, then masked; a rotation shows the new token and keeps the old one a day', async () => {
    const empty = await client.get('/dashboard/settings/twilio');
    assert.equal(empty.statusCode, 200);
    assert.match(empty.body, /No credentials yet/);
    assert.match(empty.body, /aria-current="page">Twilio-compatible API/);
    const created = await client.post('/dashboard/settings/twilio/rotate', {}, empty.body);
    assert.equal(created.statusCode, 200);
    assert.equal(created.headers['cache-control'], 'no-store');
    sid = /id="twilio-sid">(AC[0-9a-f]{32})</.exec(created.body)?.[1] ?? '';
    token = /id="twilio-token">([0-9a-f]{32})</.exec(created.body)?.[1] ?? '';
    assert.ok(sid && token, 'SID and token in full');
    const later = await client.get('/dashboard/settings/twilio');
    assert.ok(later.body.includes(sid));
    assert.ok(!later.body.includes(token), 'the token is not shown again');
    assert.match(later.body, new RegExp(`\\*{28}${token.slice(-4)}`));
    const rotated = await client.post('/dashboard/settings/twilio/rotate', {}, later.body);
    next = /id="twilio-token">([0-9a-f]{32})</.exec(rotated.body)?.[1] ?? '';
    assert.ok(next && next !== token);
    assert.match(rotated.body, /previous token keeps working until/);
    for (const t of [token, next]) {
      const listed: { statusCode: number } = await h.app.inject({ method: 'GET', url: `/2010-04-01/Accounts/${sid}/Messages.json`, headers: basic(sid, t) });
      assert.equal(listed.statusCode, 200);
    }
  });

  test('an SMS URL is saved, refused when not https, cleared; only for the account’s numbers', async () => {
    const page = await client.get('/dashboard/settings/twilio');
    const saved = await client.post('/dashboard/settings/twilio/sms-url', { number: '+447700900660', url: 'https://127.0.0.1:8443/sms' }, page.body);
    assert.equal(saved.statusCode, 200);
    assert.match(saved.body, /The SMS URL was saved/);
    assert.equal((await listNumbers(h.ctx, { accountId }))[0]!.sms_url, 'https://127.0.0.1:8443/sms');
    const refused = await client.post('/dashboard/settings/twilio/sms-url', { number: '+447700900660', url: 'http://127.0.0.1/sms' }, page.body);
    assert.equal(refused.statusCode, 400);
    assert.match(refused.body, /https/);
    const other = await client.post('/dashboard/settings/twilio/sms-url', { number: '+447700900999', url: 'https://127.0.0.1/sms' }, page.body);
    assert.equal(other.statusCode, 404);
    assert.match(saved.body, new RegExp(`id="twilio-sid">${sid}<`), 'the credentials stay as they were');
    const cleared = await client.post('/dashboard/settings/twilio/sms-url', { number: '+447700900660', url: '' }, page.body);
    assert.match(cleared.body, /The SMS URL was cleared/);
    assert.equal((await listNumbers(h.ctx, { accountId }))[0]!.sms_url, null);
  });
  test('a day after the rotation only the new token works', async () => {
    h.clock.advance(24 * 3600_000);
    assert.equal((await h.app.inject({ method: 'GET', url: `/2010-04-01/Accounts/${sid}/Messages.json`, headers: basic(sid, token) })).statusCode, 401, 'a day later');
    assert.equal((await h.app.inject({ method: 'GET', url: `/2010-04-01/Accounts/${sid}/Messages.json`, headers: basic(sid, next) })).statusCode, 200);
  });
});
