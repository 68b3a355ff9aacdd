/**
 * Verify through the API (DECISIONS.md §14). Codes are learned as a phone learns them: from the
 * text the carrier receives, never from Pigeon's tables.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, type Harness } from '../helpers/harness.ts';
import { lastCode as codeAt, phoneInbox, type PhoneInbox } from '../helpers/phone-inbox.ts';
import { assignNumber } from '../../src/services/numbers/numbers.ts';

describe('verify', () => {
  let h: Harness;
  let inbox: PhoneInbox;
  let seq = 0;
  before(async () => {
    h = await harness({ SIM_DELIVERY_DELAY_MS: '0' });
    inbox = phoneInbox(h);
  });
  after(() => h.close());

  const lastCode = (phone: string) => codeAt(h, inbox, phone);

  async function setup(service: Record<string, unknown> = {}, credits = 10_000) {
    const c = await h.customer({ credits });
    await h.request('PUT', '/v1/account/events-url', { key: c.key, body: { url: 'https://127.0.0.1:9/events' } });
    const created = await h.request('POST', '/v1/verify/services', { key: c.key, body: { name: 'Acme', from: 'Acme', ...service } });
    assert.equal(created.statusCode, 201, created.body);
    const id = created.json().data.id as string;
    const start = (to: string, headers?: Record<string, string>) => h.request('POST', `/v1/verify/services/${id}/verifications`, { key: c.key, body: { to }, ...(headers ? { headers } : {}) });
    const check = (body: Record<string, string>) => h.request('POST', `/v1/verify/services/${id}/checks`, { key: c.key, body });
    const events = async () =>
      (await h.ctx.store.db.selectFrom('webhook_events').select(['event', 'payload']).where('account_id', '=', c.accountId).orderBy('created_at').orderBy('id').execute())
        .filter((e) => e.event.startsWith('verification.'))
        .map((e) => ({ event: e.event, data: JSON.parse(e.payload).data }));
    return { ...c, id, start, check, events, service: created.json().data };
  }
  const phone = () => `+447400${String(++seq).padStart(6, '0')}`;

  test('a code goes to the phone, masked everywhere Pigeon keeps text; the right code approves once', async () => {
    const c = await setup();
    assert.deepEqual(
      { ...c.service, id: undefined, created_at: undefined },
      { id: undefined, created_at: undefined, name: 'Acme', from: 'Acme', code_length: 6, lifetime_seconds: 600, max_checks: 5, max_sends: 5, allowed_countries: null, fraud_guard: 'block', template: 'Your {name} code is {code}' },
    );
    const to = phone();
    const r = await c.start(to);
    assert.equal(r.statusCode, 201, r.body);
    const v = r.json().data;
    assert.equal(v.status, 'pending');
    assert.equal(v.sends, 1);
    assert.equal(v.checks_left, 5);
    assert.match(v.id, /^ver_/);
    assert.ok(v.credits_used > 0, 'priced by the rate card');
    const code = await lastCode(to);
    assert.equal(inbox.get(to)!.at(-1), `Your Acme code is ${code}`);
    const report = await h.request('GET', `/v1/sms/delivery-reports?message_id=${v.message_id}`, { key: c.key });
    assert.equal(report.statusCode, 200);
    const [row] = report.json().data;
    assert.ok(!JSON.stringify(report.json()).includes(code), 'the report never shows the code');
    assert.equal(row.status, 'delivered', 'dispatched and its receipt applied like any message');
    const stored = await h.ctx.store.db.selectFrom('messages').select('body').where('id', '=', v.message_id).executeTakeFirstOrThrow();
    assert.equal(stored.body, 'Your Acme code is ••••••');
    const wrong = code === '000000' ? '111111' : '000000';
    const bad = await c.check({ to, code: wrong });
    assert.deepEqual(bad.json().data, { id: v.id, status: 'pending', valid: false, checks_left: 4 });
    const good = await c.check({ verification_id: v.id, code });
    assert.deepEqual(good.json().data, { id: v.id, status: 'approved', valid: true, checks_left: 3 });
    const again = await c.check({ verification_id: v.id, code });
    assert.equal(again.statusCode, 404);
    assert.equal(again.json().code, 'not_found');
    const events = await c.events();
    assert.deepEqual(events.map((e) => e.event), ['verification.approved']);
    assert.equal(events[0]!.data.status, 'approved');
    assert.ok(!JSON.stringify(events).includes(code), 'never the code');
    assert.equal((await h.request('GET', `/v1/verify/verifications/${v.id}`, { key: c.key })).json().data.status, 'approved');
  });

  test('the right code checked three times at once approves once: one event, the others 404', async () => {
    // Closes of one moment are written together (check-taker.ts): two closes of one verification
    // in one group must still make one approval.
    const c = await setup();
    const others = await Promise.all([phone(), phone()].map(async (to) => ({ to, v: (await c.start(to)).json().data as { id: string } })));
    const to = phone();
    const v = (await c.start(to)).json().data;
    const code = await lastCode(to);
    // Beside them, two other verifications approved in the same moment each close once too.
    const otherCodes = await Promise.all(others.map((o) => lastCode(o.to)));
    const replies = await Promise.all([
      ...[1, 2, 3].map(() => c.check({ verification_id: v.id, code })),
      ...others.map((o, i) => c.check({ verification_id: o.v.id, code: otherCodes[i]! })),
    ]);
    const mine = replies.slice(0, 3);
    assert.deepEqual(mine.map((r) => r.statusCode).sort(), [200, 404, 404], mine.map((r) => r.body).join('\n'));
    assert.deepEqual(mine.find((r) => r.statusCode === 200)!.json().data.status, 'approved');
    for (const r of replies.slice(3)) assert.equal(r.json().data.status, 'approved', r.body);
    const events = await c.events();
    assert.deepEqual(events.map((e) => e.data.id).sort(), [v.id, ...others.map((o) => o.v.id)].sort(), 'one approval each');
  });

  test('200 parallel wrong checks evaluate at most 5', async () => {
    const c = await setup();
    const to = phone();
    const v = (await c.start(to)).json().data;
    const code = await lastCode(to);
    const wrong = code === '999999' ? '888888' : '999999';
    const replies = await Promise.all(Array.from({ length: 200 }, () => c.check({ verification_id: v.id, code: wrong })));
    const evaluated = replies.filter((r) => r.statusCode === 200);
    assert.equal(evaluated.length, 5, 'exactly the 5 checks the verification has');
    assert.ok(replies.every((r) => r.statusCode === 200 || r.json().code === 'not_found'));
    assert.equal(evaluated.filter((r) => r.json().data.status === 'max_attempts_reached').length, 1);
    assert.equal((await c.check({ verification_id: v.id, code })).statusCode, 404, 'the right code no longer works');
    assert.deepEqual((await c.events()).map((e) => e.event), ['verification.max_attempts_reached']);
  });

  test('a new request sends the same code under the same id: 30 s apart, at most 5 sends; cancel', async () => {
    const c = await setup();
    const to = phone();
    const first = (await c.start(to)).json().data;
    const code = await lastCode(to);
    const soon = await c.start(to);
    assert.equal(soon.statusCode, 429);
    assert.equal(soon.json().code, 'rate_limit_exceeded');
    assert.equal(soon.headers['retry-after'], '30');
    for (let i = 2; i <= 5; i++) {
      h.clock.advance(30_000);
      const r = await c.start(to);
      assert.equal(r.statusCode, 201, r.body);
      assert.equal(r.json().data.id, first.id);
      assert.equal(r.json().data.sends, i);
      assert.equal(await lastCode(to), code, 'the same code');
    }
    h.clock.advance(30_000);
    const sixth = await c.start(to);
    assert.equal(sixth.statusCode, 429);
    assert.equal(sixth.json().code, 'verify_max_sends');
    const canceled = await h.request('POST', `/v1/verify/verifications/${first.id}/cancel`, { key: c.key });
    assert.equal(canceled.json().data.status, 'canceled');
    assert.equal((await c.check({ to, code })).statusCode, 404);
    assert.deepEqual((await c.events()).map((e) => e.event), ['verification.canceled']);
  });

  test('expiry with its event; Idempotency-Key; country and velocity refusals', async () => {
    const c = await setup({ allowed_countries: ['GB'], lifetime_seconds: 60 });
    const to = phone();
    const headers = { 'idempotency-key': 'k1' };
    const first = await c.start(to, headers);
    const replay = await c.start(to, headers);
    assert.equal(replay.statusCode, 201);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.deepEqual(replay.json(), first.json());
    const code = await lastCode(to);
    h.clock.advance(61_000);
    await h.workers.drain();
    assert.equal((await h.request('GET', `/v1/verify/verifications/${first.json().data.id}`, { key: c.key })).json().data.status, 'expired');
    assert.equal((await c.check({ to, code })).statusCode, 404);
    assert.deepEqual((await c.events()).map((e) => e.event), ['verification.expired']);

    const french = await c.start('+33612345678');
    assert.equal(french.statusCode, 403);
    assert.equal(french.json().code, 'verify_country_blocked');

    const number = phone();
    for (let i = 0; i < 5; i++) {
      const r = (await c.start(number)).json().data;
      await c.check({ verification_id: r.id, code: await lastCode(number) });
    }
    const sixth = await c.start(number);
    assert.equal(sixth.statusCode, 429);
    assert.equal(sixth.json().code, 'rate_limit_exceeded');
    assert.ok(Number(sixth.headers['retry-after']) > 0);
  });

  test('attack: pumped ranges are blocked after the threshold, legitimate traffic never is', async (t) => {
    const c = await setup();
    const pumped = ['+447911200', '+447911201', '+447911202'];
    const legit = ['+447911300', '+447911301', '+447911302'];
    const ROUNDS = 25;
    const count = { pumpSent: 0, pumpBlocked: 0, pumpLimited: 0, legitSent: 0, legitApproved: 0, legitRefused: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      for (const range of pumped) {
        for (let k = 0; k < 2; k++) {
          const r = await c.start(`${range}${String(round * 2 + k).padStart(3, '0')}`);
          if (r.statusCode === 201) count.pumpSent++;
          else if (r.json().code === 'verify_blocked_fraud') count.pumpBlocked++;
          else count.pumpLimited++;
        }
      }
      // The legitimate users type in their codes right away (one drain per round delivers them all).
      const started: string[] = [];
      for (const range of legit) {
        const to = `${range}${String(round).padStart(3, '0')}`;
        const r = await c.start(to);
        if (r.statusCode === 201) started.push(to);
        else count.legitRefused++;
      }
      count.legitSent += started.length;
      await h.workers.drain();
      for (const to of started) {
        const checked = await c.check({ to, code: /(\d{6})$/.exec(inbox.get(to)!.at(-1)!)![1]! });
        if (checked.json().data?.valid) count.legitApproved++;
      }
      h.clock.advance(5 * 60_000);
    }
    t.diagnostic(`pumped: ${count.pumpSent} sent, ${count.pumpBlocked} blocked, ${count.pumpLimited} rate-limited; legitimate: ${count.legitSent} sent, ${count.legitApproved} approved, ${count.legitRefused} refused`);
    assert.equal(count.pumpSent, pumped.length * 10, 'each pumped range gets exactly the rule’s 10 before its block');
    assert.equal(count.pumpBlocked + count.pumpLimited, pumped.length * 2 * ROUNDS - count.pumpSent);
    assert.equal(count.legitRefused, 0);
    assert.equal(count.legitApproved, legit.length * ROUNDS);
    const blocks = (await h.request('GET', '/v1/verify/blocks', { key: c.key })).json().data;
    assert.deepEqual(blocks.map((b: { range: string }) => b.range).sort(), pumped);
    const blockedEvents = (await c.events()).filter((e) => e.event === 'verification.blocked');
    assert.equal(blockedEvents.length, count.pumpBlocked, 'one event per blocked verification');
    const credits = (await h.request('GET', '/v1/account', { key: c.key })).json().data.credits_remaining;
    const spent = 10_000 - credits;
    assert.equal(spent % (count.pumpSent + count.legitSent), 0, 'blocked verifications cost nothing');
  });
  test('monitor mode records and announces the block but sends; the safe list is never blocked; unblock', async () => {
    const monitor = await setup({ fraud_guard: 'monitor' });
    const codes: number[] = [];
    for (let i = 0; i < 12; i++) codes.push((await monitor.start(`+447911400${String(i).padStart(3, '0')}`)).statusCode);
    assert.deepEqual(new Set(codes), new Set([201]), 'every code sent');
    const blocks = (await h.request('GET', '/v1/verify/blocks', { key: monitor.key })).json().data;
    assert.deepEqual(blocks.map((b: { range: string }) => b.range), ['+447911400']);
    assert.equal((await monitor.events()).filter((e) => e.event === 'verification.blocked').length, 1, 'announced once');

    const safe = await setup();
    assert.equal((await h.request('POST', '/v1/verify/safe-list', { key: safe.key, body: { entry: '+447911500' } })).statusCode, 201);
    assert.deepEqual((await h.request('GET', '/v1/verify/safe-list', { key: safe.key })).json().data.map((e: { entry: string }) => e.entry), ['+447911500']);
    for (let i = 0; i < 12; i++) assert.equal((await safe.start(`+447911500${String(i).padStart(3, '0')}`)).statusCode, 201);
    for (let i = 0; i < 11; i++) await safe.start(`+447911600${String(i).padStart(3, '0')}`);
    const refused = await safe.start('+447911600999');
    assert.equal(refused.statusCode, 403);
    assert.equal(refused.json().code, 'verify_blocked_fraud');
    const { unblockRange } = await import('../../src/services/verify/verify.ts');
    await unblockRange(h.ctx, safe.accountId, '+447911600');
    assert.equal((await safe.start('+447911600998')).statusCode, 201, 'unblocked: the range starts afresh');
  });

  test('a recipient who replied STOP gets no code, nothing charged, until START', async () => {
    const c = await setup({}, 100);
    const number = '+447700900777';
    await assignNumber(h.ctx, c.accountId, number);
    const to = phone();
    const say = (message: string) => h.request('POST', '/v1/simulator/inbound', { key: c.key, body: { from: to, to: number, message } });
    assert.equal((await say('STOP')).statusCode, 201);
    await h.workers.drain();
    const received = inbox.get(to)?.length ?? 0; // the STOP confirmation
    const before = (await h.request('GET', '/v1/account', { key: c.key })).json().data.credits_remaining;
    const refused = await c.start(to);
    assert.equal(refused.statusCode, 400, refused.body);
    assert.equal(refused.json().code, 'recipient_opted_out');
    await h.workers.drain();
    assert.equal(inbox.get(to)?.length ?? 0, received, 'no code reached the phone');
    assert.equal((await h.request('GET', '/v1/account', { key: c.key })).json().data.credits_remaining, before);
    assert.equal((await c.check({ to, code: '123456' })).statusCode, 404, 'no verification was made');
    assert.equal((await say('START')).statusCode, 201);
    assert.equal((await c.start(to)).statusCode, 201, 'after START codes go again');
  });

  test('parallel creates to one range stop exactly at the fraud guard limits', async () => {
    // 40 numbers of one range at once. Monitor mode: the velocity rule's 30 an hour, no more.
    const monitored = await setup({ fraud_guard: 'monitor' });
    const range = `+447401${String(++seq).padStart(3, '0')}`;
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => monitored.start(`${range}${String(i).padStart(3, '0')}`)));
    const codes = (status: number) => answers.filter((r) => r.statusCode === status).length;
    assert.equal(codes(201), 30, answers.filter((r) => r.statusCode !== 201 && r.statusCode !== 429).map((r) => r.body).join('\n'));
    assert.equal(codes(429), 10);
    // Block mode: the conversion rule blocks the range once 10 were sent and none approved.
    const blocking = await setup();
    const other = `+447402${String(++seq).padStart(3, '0')}`;
    const blocked = await Promise.all(Array.from({ length: 40 }, (_, i) => blocking.start(`${other}${String(i).padStart(3, '0')}`)));
    assert.equal(blocked.filter((r) => r.statusCode === 201).length, 10, blocked.map((r) => r.statusCode).join(' '));
    assert.ok(blocked.filter((r) => r.statusCode !== 201).every((r) => r.statusCode === 403 && r.json().code === 'verify_blocked_fraud'));
    const messages = await h.ctx.store.db.selectFrom('messages').select('id').where('account_id', '=', blocking.accountId).execute();
    assert.equal(messages.length, 10, 'only the sent ones are messages');
  });

  test('a service changed or deleted, here or by another process, applies to the very next create', async () => {
    const c = await setup();
    const first = phone();
    assert.equal((await c.start(first)).statusCode, 201);
    assert.equal((await lastCode(first)).length, 6);
    // Through the API.
    assert.equal((await h.request('PATCH', `/v1/verify/services/${c.id}`, { key: c.key, body: { code_length: 8, template: 'For {name}, the code is {code}' } })).statusCode, 200);
    const second = phone();
    assert.equal((await c.start(second)).statusCode, 201);
    const code = await lastCode(second);
    assert.equal(code.length, 8);
    assert.equal(inbox.get(second)!.at(-1), `For Acme, the code is ${code}`);
    // By another process: a change this one never saw made.
    await h.ctx.store.db.updateTable('verify_services').set({ code_length: 4 }).where('id', '=', c.id).execute();
    const third = phone();
    assert.equal((await c.start(third)).statusCode, 201);
    assert.equal((await lastCode(third)).length, 4);
    await h.ctx.store.db.updateTable('verify_services').set({ deleted_at: h.clock.now() }).where('id', '=', c.id).execute();
    const fourth = await c.start(phone());
    assert.equal(fourth.statusCode, 404, fourth.body);
    assert.equal(fourth.json().code, 'not_found');
    const messages = await h.ctx.store.db.selectFrom('messages').select('id').where('account_id', '=', c.accountId).execute();
    assert.equal(messages.length, 3, 'nothing accepted for the deleted service');
  });

  test('a key revoked by another process is refused at its next create and check, which send and take nothing', async () => {
    const c = await setup();
    const to = phone();
    const v = (await c.start(to)).json().data;
    const code = await lastCode(to);
    // Written directly, as another process would: this one is not told.
    await h.ctx.store.db.updateTable('api_keys').set({ revoked_at: h.clock.now() }).where('id', '=', c.keyId).execute();
    const check = await c.check({ verification_id: v.id, code });
    assert.equal(check.statusCode, 401, check.body);
    assert.equal(check.json().code, 'api_key_revoked');
    const create = await c.start(phone());
    assert.equal(create.statusCode, 401, create.body);
    assert.equal(create.json().code, 'api_key_revoked');
    const resend = await c.start(to);
    assert.equal(resend.statusCode, 401, resend.body);
    const row = await h.ctx.store.db.selectFrom('verifications').select(['status', 'checks_left', 'sends']).where('id', '=', v.id).executeTakeFirstOrThrow();
    assert.deepEqual([row.status, Number(row.checks_left), Number(row.sends)], ['pending', 5, 1], 'no check taken, nothing sent again');
    const messages = await h.ctx.store.db.selectFrom('messages').select('id').where('account_id', '=', c.accountId).execute();
    assert.equal(messages.length, 1);
  });

  test('parallel creates that the balance covers only in part: those covered go in, the rest are refused with nothing written', async () => {
    // One credit a code: three of six fit. The group that first tries all six is refused its debit
    // and is written again one acceptance at a time, in arrival order.
    const c = await setup({}, 3);
    const numbers = Array.from({ length: 6 }, () => phone());
    const answers = await Promise.all(numbers.map((to) => c.start(to)));
    assert.deepEqual(answers.map((r) => r.statusCode).sort(), [201, 201, 201, 422, 422, 422], answers.map((r) => r.body).join('\n'));
    for (const r of answers.filter((a) => a.statusCode === 402)) assert.equal(r.json().code, 'insufficient_credits');
    const created = answers.filter((r) => r.statusCode === 201).map((r) => r.json().data.to as string).sort();
    const rows = await h.ctx.store.db.selectFrom('verifications').select(['recipient', 'status']).where('account_id', '=', c.accountId).execute();
    assert.deepEqual(rows.map((r) => r.recipient).sort(), created, 'a verification row for each one accepted, none for the refused');
    const messages = await h.ctx.store.db.selectFrom('messages').select('recipient').where('account_id', '=', c.accountId).execute();
    assert.deepEqual(messages.map((m) => m.recipient).sort(), created);
    assert.equal((await h.request('GET', '/v1/account', { key: c.key })).json().data.credits_remaining, 0);
    await h.workers.drain();
    for (const to of created) assert.equal((await lastCode(to)).length, 6);
  });

  test('parallel creates for one number make one pending verification and send one code', async () => {
    const c = await setup();
    for (let round = 0; round < 3; round++) {
      const to = phone();
      const answers = await Promise.all([c.start(to), c.start(to), c.start(to), c.start(to)]);
      const created = answers.filter((r) => r.statusCode === 201);
      assert.equal(created.length, 1, answers.map((r) => r.body).join('\n'));
      for (const r of answers.filter((a) => a.statusCode !== 201)) {
        assert.equal(r.statusCode, 429, r.body);
        assert.equal(r.json().code, 'rate_limit_exceeded');
        assert.ok(Number(r.headers['retry-after']) > 0);
      }
      await h.workers.drain();
      assert.equal(inbox.get(to)?.length, 1, 'one code sent');
      const rows = await h.ctx.store.db.selectFrom('verifications').select(['status', 'sends']).where('recipient', '=', to).execute();
      assert.deepEqual(rows.map((r) => [r.status, Number(r.sends)]), [['pending', 1]]);
      const messages = await h.ctx.store.db.selectFrom('messages').select('id').where('account_id', '=', c.accountId).where('recipient', '=', to).execute();
      assert.equal(messages.length, 1, 'one message accepted and charged');
    }
  });
});
