/** Numbers assigned to an account (DECISIONS.md §8): listed by `GET /v1/numbers`, usable as `from`. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';
import { assignNumber, listNumbers, releaseNumber } from '../../src/services/numbers/numbers.ts';
import { AppError } from '../../src/errors/catalogue.ts';

describe('numbers', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  test('GET /v1/numbers lists the account’s own numbers, newest first, and needs numbers:read', async () => {
    const { accountId, key } = await h.customer();
    const other = await h.customer();
    await assignNumber(h.ctx, accountId, '+44 7700 900101', 'Support');
    h.clock.advance(5);
    await assignNumber(h.ctx, accountId, '60606');
    await assignNumber(h.ctx, other.accountId, '+447700900102');
    const res = await h.request('GET', '/v1/numbers', { key });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), {
      status: 'success',
      data: [
        { number: '60606', label: null, created_at: new Date(h.clock.ms).toISOString() },
        { number: '+447700900101', label: 'Support', created_at: new Date(h.clock.ms - 5).toISOString() },
      ],
    });
    const narrow = await h.customer({ scopes: 'sms:send' });
    const refused = await h.request('GET', '/v1/numbers', { key: narrow.key });
    assert.equal(refused.statusCode, 403);
    assert.equal(refused.json().code, 'insufficient_permissions');
    assert.equal((await h.request('GET', '/v1/numbers')).statusCode, 401);
  });

  test('a key created without a scope list has the new scopes', async () => {
    const { key } = await h.customer();
    for (const path of ['/v1/numbers']) assert.equal((await h.request('GET', path, { key })).statusCode, 200, path);
  });

  test('a send may come from an assigned number (E.164 or short code), spelled as assigned; not from another account’s', async () => {
    const { accountId, key } = await h.customer({ credits: 10 });
    const other = await h.customer();
    await assignNumber(h.ctx, accountId, '+447700900201');
    await assignNumber(h.ctx, accountId, '70707');
    await assignNumber(h.ctx, other.accountId, '+447700900202');
    const fromLong = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: '+44 7700-900201', message: 'hi' } });
    assert.equal(fromLong.statusCode, 200, fromLong.body);
    assert.equal(fromLong.json().from, '+447700900201');
    const fromShort = await h.request('POST', '/v1/sms/bulk', { key, body: { from: '70707', messages: [{ to: '+447911123456', message: 'hi' }] } });
    assert.equal(fromShort.statusCode, 200, fromShort.body);
    assert.equal(fromShort.json().queued, 1);
    const report = await h.request('GET', `/v1/sms/delivery-reports?message_id=${fromLong.json().message_id}`, { key });
    assert.equal(report.json().data[0].from, '+447700900201');
    const stolen = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: '+447700900202', message: 'hi' } });
    assert.equal(stolen.statusCode, 400);
    assert.equal(stolen.json().code, 'invalid_sender_id');
    const unknown = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: '+447700900299', message: 'hi' } });
    assert.equal(unknown.json().code, 'invalid_sender_id');
    // Nothing was debited for the refusals: 10 - 1 - 1.
    assert.equal((await h.request('GET', '/v1/account', { key })).json().data.credits_remaining, 8);
  });

  test('a released number is refused at the next send; a re-assigned one is the new account’s', async () => {
    const first = await h.customer();
    const second = await h.customer();
    await assignNumber(h.ctx, first.accountId, '+447700900301');
    const send = (key: string) => h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: '+447700900301', message: 'hi' } });
    assert.equal((await send(first.key)).statusCode, 200);
    await releaseNumber(h.ctx, '+447700900301');
    assert.equal((await send(first.key)).json().code, 'invalid_sender_id');
    await assignNumber(h.ctx, second.accountId, '+447700900301');
    assert.equal((await send(second.key)).statusCode, 200);
    assert.equal((await send(first.key)).json().code, 'invalid_sender_id');
  });

  test('assigning checks the number and the account; a number belongs to one account', async () => {
    const { accountId } = await h.customer();
    const other = await h.customer();
    await assignNumber(h.ctx, accountId, '+447700900401');
    const code = async (p: Promise<unknown>) => {
      try {
        await p;
        return 'ok';
      } catch (e) {
        return e instanceof AppError ? e.code : String(e);
      }
    };
    assert.equal(await code(assignNumber(h.ctx, other.accountId, '+447700900401')), 'number_taken');
    assert.equal(await code(assignNumber(h.ctx, other.accountId, '447700900401')), 'invalid_number');
    assert.equal(await code(assignNumber(h.ctx, other.accountId, '12')), 'invalid_number');
    assert.equal(await code(assignNumber(h.ctx, other.accountId, '+4412')), 'invalid_number');
    assert.equal(await code(assignNumber(h.ctx, 'acc_none', '+447700900402')), 'not_found');
    assert.equal(await code(assignNumber(h.ctx, other.accountId, '+447700900402', 'x'.repeat(101))), 'invalid_request');
    assert.equal(await code(releaseNumber(h.ctx, '+447700900499')), 'not_found');
    assert.deepEqual((await listNumbers(h.ctx, { accountId: other.accountId })).map((n) => n.number), []);
  });
});
