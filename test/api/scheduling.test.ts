/**
 * Scheduled sends (DECISIONS.md §8) through the HTTP interface, with the test clock: due, early,
 * late, clock skew, release-time checks, restarts, crashes and racing schedulers.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { harness, type Harness } from '../helpers/harness.ts';
import { createWorkers } from '../../src/workers/workers.ts';
import { Scheduler } from '../../src/workers/scheduler.ts';
import { setAccountStatus } from '../../src/services/accounts/accounts.ts';
import { rejectSenderId } from '../../src/services/sender-ids/sender-ids.ts';
import { assignNumber, releaseNumber } from '../../src/services/numbers/numbers.ts';
import { releaseScheduledMessages, releaseSlices, stageUpcomingDispatch, STAGE_AHEAD_MS } from '../../src/services/messages/release-scheduled.ts';
import { dispatchJobs as dispatchClaimed } from '../../src/services/messages/dispatch-messages.ts';
import { expireValidityPeriods } from '../../src/services/messages/expire-validity-periods.ts';
import { claimJobs, deferJobs } from '../../src/store/repositories/jobs.repository.ts';
import { testDialect } from '../helpers/test-store.ts';
import { waitFor } from '../helpers/wait-for.ts';

const MINUTE = 60_000;

describe('scheduled sends', () => {
  let h: Harness;
  before(async () => {
    h = await harness({ DISPATCH_BACKLOG_LIMIT: '5' });
  });
  after(() => h.close());

  const at = (offsetMs: number) => new Date(h.clock.now() + offsetMs).toISOString();
  const body = (extra: Record<string, unknown> = {}) => ({ to: '+447911123456', from: 'Acme', message: 'Your appointment is tomorrow', ...extra });
  async function report(key: string, id: string) {
    return (await h.request('GET', `/v1/sms/delivery-reports?message_id=${id}`, { key })).json().data[0];
  }
  async function dispatchJobs(ids: string[]) {
    return h.ctx.store.db.selectFrom('jobs').select('ref').where('queue', '=', 'dispatch').where('ref', 'in', ids).execute();
  }
  async function balance(key: string) {
    return (await h.request('GET', '/v1/account', { key })).json().data.credits_remaining as number;
  }
  /** A bulk of two due in a minute, with a callback: one credit to +447911123456, two to +447911123457. */
  async function scheduleTwo(key: string) {
    const res = await h.request('POST', '/v1/sms/bulk', {
      key,
      body: { from: 'Acme', send_at: at(MINUTE), callback_url: 'https://hooks.example.com/sms', messages: [{ to: '+447911123456', message: 'a' }, { to: '+447911123457', message: 'b'.repeat(200) }] },
    });
    const bulk = res.json();
    assert.equal(bulk.credits_remaining, 7);
    return bulk;
  }

  test('a send with send_at is debited now, stays scheduled until its time (not a millisecond early), then goes out', async () => {
    const { key } = await h.customer({ credits: 10 });
    const sendAt = h.clock.now() + 10 * MINUTE;
    const res = await h.request('POST', '/v1/sms/send', { key, body: body({ send_at: new Date(sendAt).toISOString().replace('Z', '+00:00') }) });
    assert.equal(res.statusCode, 200);
    const sent = res.json();
    assert.equal(sent.send_at, new Date(sendAt).toISOString(), 'echoed, in UTC');
    assert.equal(sent.credits_used, 1);
    assert.equal(sent.credits_remaining, 9);
    assert.equal(await balance(key), 9, 'debited at acceptance');
    const first = await report(key, sent.message_id);
    assert.equal(first.status, 'scheduled');
    assert.equal(first.send_at, new Date(sendAt).toISOString());
    assert.equal(first.sent_at, null);
    assert.deepEqual(await dispatchJobs([sent.message_id]), [], 'not queued for dispatch yet');

    h.clock.ms = sendAt - 1;
    await h.workers.drain();
    assert.equal((await report(key, sent.message_id)).status, 'scheduled', 'early: still scheduled');

    h.clock.ms = sendAt;
    await h.workers.drain();
    const out = await report(key, sent.message_id);
    assert.equal(out.status, 'sent', 'released at its time and dispatched at once');
    assert.equal(out.sent_at, new Date(sendAt).toISOString());
    assert.equal(await balance(key), 9, 'no second debit');
  });

  test('a message whose time passed while nothing ran (late) is released once, on the next run', async () => {
    const { key } = await h.customer({ credits: 10 });
    const res = await h.request('POST', '/v1/sms/send', { key, body: body({ send_at: at(MINUTE) }) });
    const id = res.json().message_id;
    h.clock.advance(3 * 60 * MINUTE);
    await h.workers.drain();
    await h.workers.drain();
    assert.equal((await report(key, id)).status, 'sent');
    const ledger = await h.ctx.store.db.selectFrom('credit_ledger').select(['kind', 'amount']).where('reference', '=', id).execute();
    assert.deepEqual(ledger, [{ kind: 'debit', amount: -1 }]);
  });

  test('clock skew: up to 30 s in the past counts as now; earlier, over 35 days ahead, or unparseable is 400 invalid_send_at', async () => {
    const { key } = await h.customer({ credits: 10 });
    const skewed = await h.request('POST', '/v1/sms/send', { key, body: body({ send_at: at(-30_000) }) });
    assert.equal(skewed.statusCode, 200);
    assert.equal(skewed.json().send_at, at(-30_000));
    assert.equal((await report(key, skewed.json().message_id)).status, 'pending', 'sent at once');
    assert.equal((await dispatchJobs([skewed.json().message_id])).length, 1);

    const ahead = await h.request('POST', '/v1/sms/send', { key, body: body({ send_at: at(35 * 24 * 60 * MINUTE) }) });
    assert.equal(ahead.statusCode, 200, 'exactly 35 days ahead is accepted');
    assert.equal((await report(key, ahead.json().message_id)).status, 'scheduled');

    const before = await balance(key);
    for (const sendAt of [
      at(-30_001),
      at(35 * 24 * 60 * MINUTE + 1),
      '2026-03-01T13:00:00', // no offset
      '2026-03-01 13:00',
      '2026-02-30T13:00:00Z',
      '2026-03-01T25:00:00Z',
      'tomorrow',
      '',
      'x'.repeat(65),
    ]) {
      for (const [path, payload] of [
        ['/v1/sms/send', body({ send_at: sendAt })],
        ['/v1/sms/bulk', { from: 'Acme', messages: [{ to: '+447911123456', message: 'hi' }], send_at: sendAt }],
      ] as const) {
        const res = await h.request('POST', path, { key, body: payload });
        assert.equal(res.statusCode, 400, `${path} ${sendAt}`);
        assert.equal(res.json().code, 'invalid_send_at', `${path} ${sendAt}`);
        assert.equal(res.json().details?.[0]?.field, 'send_at');
      }
    }
    for (const sendAt of [12, null, { at: 1 }]) {
      const res = await h.request('POST', '/v1/sms/send', { key, body: body({ send_at: sendAt }) });
      assert.equal(res.json().code, 'invalid_send_at', JSON.stringify(sendAt));
    }
    assert.equal(await balance(key), before, 'nothing debited for the refused ones');
  });

  test('offsets are honoured: 09:00+01:00 is 08:00Z', async () => {
    const { key } = await h.customer({ credits: 10 });
    // The test clock is 2026-03-01T12:00:00Z.
    const res = await h.request('POST', '/v1/sms/send', { key, body: body({ send_at: '2026-03-02T09:00:00.250+01:00' }) });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().send_at, '2026-03-02T08:00:00.250Z');
  });

  test('bulk: send_at at the top level schedules every valid entry, echoed; the batch goes out together', async () => {
    const { key } = await h.customer({ credits: 10 });
    const sendAt = at(5 * MINUTE);
    const res = await h.request('POST', '/v1/sms/bulk', {
      key,
      body: { from: 'Acme', send_at: sendAt, messages: [{ to: '+447911123456', message: 'a' }, { to: 'nope', message: 'b' }, { to: '+447911123457', message: 'c' }] },
    });
    assert.equal(res.statusCode, 200);
    const bulk = res.json();
    assert.equal(bulk.send_at, sendAt);
    assert.equal(bulk.queued, 2);
    assert.equal(bulk.credits_remaining, 8);
    const scheduled = await h.request('GET', `/v1/sms/delivery-reports?batch_id=${bulk.batch_id}&status=scheduled`, { key });
    assert.equal(scheduled.json().pagination.total, 2);
    h.clock.advance(5 * MINUTE);
    await h.workers.drain();
    const sent = await h.request('GET', `/v1/sms/delivery-reports?batch_id=${bulk.batch_id}&status=sent`, { key });
    assert.equal(sent.json().pagination.total, 2);
  });

  test('scheduled messages do not count against the dispatch backlog until released', async () => {
    const { key } = await h.customer({ credits: 100 });
    await h.workers.drain();
    h.clock.advance(1000);
    const messages = Array.from({ length: 8 }, () => ({ to: '+447911123456', message: 'later' }));
    const res = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', send_at: at(MINUTE), messages } });
    assert.equal(res.statusCode, 200, 'eight scheduled over a backlog limit of five');
    h.clock.advance(1000);
    const now = await h.request('POST', '/v1/sms/send', { key, body: body() });
    assert.equal(now.statusCode, 200, 'the backlog is still empty');
    assert.equal((await h.request('GET', '/v1/account', { key })).json().data.messages_pending, 1);
    h.clock.advance(MINUTE);
    await h.workers.drain();
  });

  test('suspended at release: failed with account_suspended, refunded with a ledger row, sms.failed raised', async () => {
    const { key, accountId } = await h.customer({ credits: 10 });
    const bulk = await scheduleTwo(key);
    await setAccountStatus(h.ctx, accountId, 'suspended');
    h.clock.advance(MINUTE);
    await h.workers.drain();
    await setAccountStatus(h.ctx, accountId, 'active');
    const reports = (await h.request('GET', `/v1/sms/delivery-reports?batch_id=${bulk.batch_id}`, { key })).json().data;
    assert.deepEqual(reports.map((r: { status: string; error_code: string; sent_at: string | null }) => [r.status, r.error_code, r.sent_at]), [
      ['failed', 'account_suspended', null],
      ['failed', 'account_suspended', null],
    ]);
    assert.equal(await balance(key), 10, 'all three credits back');
    const refunds = await h.ctx.store.db.selectFrom('credit_ledger').select(['amount', 'note']).where('account_id', '=', accountId).where('kind', '=', 'refund').execute();
    assert.deepEqual(refunds.map((r) => [r.amount, r.note]).sort(), [
      [1, 'account_suspended'],
      [2, 'account_suspended'],
    ]);
    const events = await h.ctx.store.db.selectFrom('webhook_events').select('event').where('batch_id', '=', bulk.batch_id).execute();
    assert.deepEqual(events.map((e) => e.event), ['sms.failed', 'sms.failed']);
    assert.deepEqual(await dispatchJobs(bulk.messages.map((m: { message_id: string }) => m.message_id)), [], 'nothing dispatched');
  });

  test('a recipient who opts out before the time: failed at release with recipient_opted_out, refunded with a ledger row, sms.failed raised', async () => {
    const { key, accountId } = await h.customer({ credits: 10 });
    const bulk = await scheduleTwo(key);
    const [kept, dropped] = bulk.messages.map((m: { message_id: string }) => m.message_id) as [string, string];
    assert.equal((await h.request('POST', '/v1/opt-outs', { key, body: { phone: '+447911123457' } })).statusCode, 201);
    h.clock.advance(MINUTE);
    // Released only, not dispatched: the refusal happens in the release itself.
    const summary = await releaseScheduledMessages(h.ctx, 100);
    assert.equal(summary.released, 1);
    assert.equal(summary.failed, 1);
    const r = await report(key, dropped);
    assert.deepEqual([r.status, r.error_code, r.sent_at], ['failed', 'recipient_opted_out', null]);
    assert.match(r.error_message, /opted out/);
    assert.equal((await report(key, kept)).status, 'pending');
    assert.deepEqual(await dispatchJobs([dropped]), [], 'its dispatch job taken back');
    assert.equal(await balance(key), 9, 'the opted-out message’s two credits back');
    const refunds = await h.ctx.store.db.selectFrom('credit_ledger').select(['amount', 'note']).where('account_id', '=', accountId).where('kind', '=', 'refund').execute();
    assert.deepEqual(refunds.map((x) => [x.amount, x.note]), [[2, 'recipient_opted_out']]);
    const events = await h.ctx.store.db.selectFrom('webhook_events').select(['event', 'message_id']).where('batch_id', '=', bulk.batch_id).execute();
    assert.deepEqual(events.map((e) => [e.event, e.message_id]), [['sms.failed', dropped]]);
    await h.workers.drain();
    assert.notEqual((await report(key, kept)).status, 'failed', 'the other recipient’s message goes out');
  });

  test('a Sender ID withdrawn before the time: failed with sender_not_allowed and refunded', async () => {
    const { key, accountId } = await h.customer({ credits: 10 });
    const id = (await h.request('POST', '/v1/sms/send', { key, body: body({ send_at: at(MINUTE) }) })).json().message_id;
    const sender = await h.ctx.store.db.selectFrom('sender_ids').select('id').where('account_id', '=', accountId).executeTakeFirstOrThrow();
    await rejectSenderId(h.ctx, sender.id, 'impersonation');
    h.clock.advance(MINUTE);
    await h.workers.drain();
    const r = await report(key, id);
    assert.equal(r.status, 'failed');
    assert.equal(r.error_code, 'sender_not_allowed');
    assert.equal(await balance(key), 10);
  });

  test('from one of the account’s numbers: released while the account holds it; refused and refunded once it is released', async () => {
    const { key, accountId } = await h.customer({ credits: 10 });
    await assignNumber(h.ctx, accountId, '+447700900301');
    const send = async () => (await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: '+447700900301', message: 'hi', send_at: at(MINUTE) } })).json().message_id as string;
    const kept = await send();
    h.clock.advance(MINUTE);
    await h.workers.drain();
    assert.notEqual((await report(key, kept)).status, 'failed');
    const dropped = await send();
    await releaseNumber(h.ctx, '+447700900301');
    h.clock.advance(MINUTE);
    await h.workers.drain();
    const r = await report(key, dropped);
    assert.equal(r.status, 'failed');
    assert.equal(r.error_code, 'sender_not_allowed');
    assert.equal(await balance(key), 9);
  });

  test('restart in the middle: what one scheduler released stays released, the next releases the rest, each exactly once', async () => {
    const { key } = await h.customer({ credits: 100 });
    const messages = Array.from({ length: 12 }, (_, i) => ({ to: `+4479111234${String(i).padStart(2, '0')}`, message: `m${i}` }));
    const bulk = (await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', send_at: at(MINUTE), messages } })).json();
    const ids: string[] = bulk.messages.map((m: { message_id: string }) => m.message_id);
    h.clock.advance(MINUTE);
    const first = await releaseScheduledMessages(h.ctx, 5);
    assert.equal(first.released, 5);
    // The process stops here; another starts with its own scheduler.
    assert.equal(await new Scheduler(h.ctx, { batchSize: 5 }).drain(), 7, 'the rest, and only the rest');
    assert.equal((await dispatchJobs(ids)).length, 12, 'one dispatch job per message');
    await createWorkers(h.ctx, h.carrier).drain();
    const rows = await h.ctx.store.db.selectFrom('messages').select(['id', 'status']).where('id', 'in', ids).execute();
    assert.ok(rows.every((m) => m.status === 'sent'), 'every message went out');
    assert.equal(await balance(key), 88, 'debited once, never refunded or charged again');
  });

  test('a crash inside the release transaction leaves every message scheduled; the next run releases each once', async () => {
    const { key } = await h.customer({ credits: 100 });
    const messages = Array.from({ length: 4 }, (_, i) => ({ to: `+4479111235${i}0`, message: `m${i}` }));
    const bulk = (await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', send_at: at(MINUTE), messages } })).json();
    const ids: string[] = bulk.messages.map((m: { message_id: string }) => m.message_id);
    h.clock.advance(MINUTE);
    // The dispatch jobs are the release's last write: make it fail there, as a crash would.
    const db = h.ctx.store.db;
    if (h.ctx.store.dialect === 'postgres') {
      await sql`create function crash_release() returns trigger language plpgsql as $$ begin raise exception 'crash'; end $$`.execute(db);
      await sql`create trigger crash_release before insert on jobs for each row when (new.queue = 'dispatch') execute function crash_release()`.execute(db);
    } else {
      await sql`create trigger crash_release before insert on jobs when new.queue = 'dispatch' begin select raise(abort, 'crash'); end`.execute(db);
    }
    await assert.rejects(releaseScheduledMessages(h.ctx, 100));
    if (h.ctx.store.dialect === 'postgres') await sql`drop trigger crash_release on jobs`.execute(db);
    else await sql`drop trigger crash_release`.execute(db);
    const still = await db.selectFrom('messages').select('status').where('id', 'in', ids).execute();
    assert.deepEqual(still.map((m) => m.status), ['scheduled', 'scheduled', 'scheduled', 'scheduled']);
    assert.deepEqual(await dispatchJobs(ids), []);
    assert.equal((await releaseScheduledMessages(h.ctx, 100)).released, 4);
    assert.equal((await dispatchJobs(ids)).length, 4);
    await h.workers.drain();
  });

  test('two schedulers racing release every message exactly once', async () => {
    const { key } = await h.customer({ credits: 1000 });
    const messages = Array.from({ length: 300 }, (_, i) => ({ to: `+447911${String(100000 + i)}`, message: `m${i}` }));
    const bulk = (await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', send_at: at(MINUTE), messages } })).json();
    assert.equal(bulk.queued, 300);
    const ids: string[] = bulk.messages.map((m: { message_id: string }) => m.message_id);
    h.clock.advance(MINUTE);
    const a = new Scheduler(h.ctx, { batchSize: 40 });
    const b = new Scheduler(h.ctx, { batchSize: 40 });
    const [na, nb] = await Promise.all([a.drain(), b.drain()]);
    assert.equal(na + nb, 300);
    const jobs = await dispatchJobs(ids);
    assert.equal(jobs.length, 300);
    assert.equal(new Set(jobs.map((j) => j.ref)).size, 300, 'one dispatch job per message');
    await h.workers.drain();
    assert.equal(await balance(key), 700);
  });

  test('releases side by side each take their own slice of the due messages, in due order, whichever runs first', async () => {
    const { key } = await h.customer({ credits: 100 });
    const base = h.clock.now() + MINUTE;
    const due = Array.from({ length: 12 }, (_, i) => base + i * 1000);
    for (const [i, sendAt] of due.entries()) {
      const res = await h.request('POST', '/v1/sms/send', { key, body: body({ to: `+4479111236${String(i).padStart(2, '0')}`, send_at: new Date(sendAt).toISOString() }) });
      assert.equal(res.statusCode, 200);
    }
    h.clock.advance(MINUTE + 12_000);
    const slices = await releaseSlices(h.ctx, 5, 2);
    assert.equal(slices.length, 2);
    // The second slice, released first, still takes the 6th to the 10th due, not the earliest.
    const second = await releaseScheduledMessages(h.ctx, 5, slices[1]);
    const first = await releaseScheduledMessages(h.ctx, 5, slices[0]);
    assert.deepEqual(first.sendAts, due.slice(0, 5));
    assert.deepEqual(second.sendAts, due.slice(5, 10));
    assert.deepEqual(await releaseSlices(h.ctx, 5, 2), [{}], 'fewer due than a slice: one release, open-ended');
    assert.deepEqual((await releaseScheduledMessages(h.ctx, 5)).sendAts, due.slice(10));
    await h.workers.drain();
    assert.equal(await balance(key), 88);
  });

  test('validity_period out of range or not a whole number is 400 invalid_validity_period', async () => {
    const { key } = await h.customer({ credits: 10 });
    for (const vp of [59, 259_201, 120.5, -1, 'abc', null]) {
      const res = await h.request('POST', '/v1/sms/send', { key, body: body({ validity_period: vp }) });
      assert.equal(res.statusCode, 400, String(vp));
      assert.equal(res.json().code, 'invalid_validity_period', String(vp));
      const bulk = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', validity_period: vp, messages: [{ to: '+447911123456', message: 'hi' }] } });
      assert.equal(bulk.json().code, 'invalid_validity_period', `bulk ${vp}`);
    }
    const ok = await h.request('POST', '/v1/sms/send', { key, body: body({ validity_period: 60 }) });
    assert.equal(ok.statusCode, 200);
    assert.equal(ok.json().validity_period, 60);
    await h.workers.drain();
  });
});

describe('dispatch jobs staged before the time', () => {
  let h: Harness;
  before(async () => {
    h = await harness({ DISPATCH_BACKLOG_LIMIT: '5' });
  });
  after(() => h.close());

  const SOON = STAGE_AHEAD_MS / 2;
  const at = (offsetMs: number) => new Date(h.clock.now() + offsetMs).toISOString();
  async function jobsOf(ids: string[]) {
    return h.ctx.store.db.selectFrom('jobs').select(['ref', 'run_at', 'created_at']).where('queue', '=', 'dispatch').where('ref', 'in', ids).orderBy('ref').execute();
  }
  async function status(id: string) {
    return (await h.ctx.store.db.selectFrom('messages').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status;
  }
  /** Runs a scheduler's own loop until `ids` all have their dispatch job (or 20 s pass). */
  async function stageWithScheduler(ids: string[]) {
    const scheduler = new Scheduler(h.ctx, { idleMs: 20 });
    scheduler.start();
    const until = Date.now() + 20_000;
    while ((await jobsOf(ids)).length < ids.length && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    await scheduler.stop();
  }

  test('the scheduler stages the jobs of messages due soon, outside the backlog until their time; the release keeps them; each goes out once', async () => {
    const { key, accountId } = await h.customer({ credits: 100 });
    await h.workers.drain();
    const sendAt = h.clock.now() + SOON;
    const messages = Array.from({ length: 8 }, (_, i) => ({ to: `+4479111237${String(i).padStart(2, '0')}`, message: `soon ${i}` }));
    const soon = (await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', send_at: new Date(sendAt).toISOString(), messages } })).json();
    const later = (await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'later', send_at: at(STAGE_AHEAD_MS + MINUTE) } })).json();
    const ids: string[] = soon.messages.map((m: { message_id: string }) => m.message_id);
    await stageWithScheduler(ids);
    const staged = await jobsOf(ids);
    assert.equal(staged.length, 8);
    assert.ok(staged.every((j) => Number(j.run_at) === sendAt && Number(j.created_at) === sendAt), 'each waits for its send_at, and joins the backlog then');
    assert.deepEqual(await jobsOf([later.message_id]), [], 'not one due later than the staging window');
    assert.ok((await Promise.all(ids.map(status))).every((s) => s === 'scheduled'));
    const now = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'now' } });
    assert.equal(now.statusCode, 200, 'eight staged jobs over a backlog limit of five: not in the backlog yet');
    await h.workers.drain();

    h.clock.advance(SOON);
    const released = await releaseScheduledMessages(h.ctx, 100);
    assert.equal(released.released, 8);
    assert.equal((await jobsOf(ids)).length, 8, 'the staged jobs, not a second one each');
    const refused = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', messages } });
    assert.equal(refused.statusCode, 503, 'released, they are the backlog');
    await h.workers.drain();
    assert.ok((await Promise.all(ids.map(status))).every((s) => s === 'sent'));
    assert.ok(ids.every((id) => h.carrier.submitted.get(id) === 1), 'each handed to the carrier once');
    const debits = await h.ctx.store.db.selectFrom('credit_ledger').select('amount').where('account_id', '=', accountId).where('kind', '=', 'debit').execute();
    assert.equal(debits.reduce((n, d) => n + Number(d.amount), 0), -10, 'debited once each, at acceptance');
    await h.request('POST', `/v1/sms/${later.message_id}/cancel`, { key });
  });

  test('a staged job that comes due before its message is released is put back, not dropped; the message goes out once', async () => {
    const { key } = await h.customer({ credits: 10 });
    const sent = (await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'hi', send_at: at(SOON) } })).json();
    await stageWithScheduler([sent.message_id]);
    h.clock.advance(SOON);
    // Dispatch claims the job before the scheduler's release.
    const claimed = await claimJobs(h.ctx.store.db, 'dispatch', 100, h.clock.now(), h.ctx.config.jobLeaseMs);
    assert.deepEqual(claimed.map((j) => j.ref), [sent.message_id]);
    const summary = await dispatchClaimed(h.ctx, h.carrier, claimed);
    assert.deepEqual([summary.waiting, summary.sent, summary.skipped], [1, 0, 0]);
    assert.equal(await status(sent.message_id), 'scheduled', 'not sent before its release');
    assert.equal(h.carrier.submitted.get(sent.message_id), undefined);
    const [job] = await h.ctx.store.db.selectFrom('jobs').select(['run_at', 'attempts']).where('ref', '=', sent.message_id).execute();
    assert.ok(job && Number(job.run_at) > h.clock.now(), 'kept, due again shortly');
    assert.equal(Number(job.attempts), 0, 'not counted as a claim: it does not look like a submit in flight');
    assert.equal((await releaseScheduledMessages(h.ctx, 100)).released, 1);
    h.clock.advance(1000);
    await h.workers.drain();
    assert.equal(await status(sent.message_id), 'sent');
    assert.equal(h.carrier.submitted.get(sent.message_id), 1);
    assert.equal((await h.request('GET', '/v1/account', { key })).json().data.credits_remaining, 9);
  });

  test('canceled before its time, or refused at release: the staged job goes with it', async () => {
    const { key, accountId } = await h.customer({ credits: 10 });
    const send = async () => (await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'hi', send_at: at(SOON) } })).json().message_id as string;
    const canceled = await send();
    const refused = await send();
    await stageWithScheduler([canceled, refused]);
    assert.equal((await h.request('POST', `/v1/sms/${canceled}/cancel`, { key })).statusCode, 200);
    assert.deepEqual(await jobsOf([canceled]), [], 'the cancel took its job back');
    await setAccountStatus(h.ctx, accountId, 'suspended');
    h.clock.advance(SOON);
    const summary = await releaseScheduledMessages(h.ctx, 100);
    assert.deepEqual([summary.released, summary.failed], [0, 1]);
    assert.deepEqual(await jobsOf([refused]), [], 'the refused one’s too');
    assert.equal(await status(refused), 'failed');
    await setAccountStatus(h.ctx, accountId, 'active');
    await h.workers.drain();
    assert.equal(h.carrier.submitted.get(canceled), undefined);
    assert.equal(h.carrier.submitted.get(refused), undefined);
    assert.equal((await h.request('GET', '/v1/account', { key })).json().data.credits_remaining, 10);
  });
});

describe('canceling scheduled messages', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  const at = (offsetMs: number) => new Date(h.clock.now() + offsetMs).toISOString();
  const cancel = (key: string, path: string) => h.request('POST', `/v1/sms/${path}/cancel`, { key });
  async function balance(key: string) {
    return (await h.request('GET', '/v1/account', { key })).json().data.credits_remaining as number;
  }

  test('one message: canceled and refunded with a ledger row, never sent, no event; a second cancel is 409 not_cancelable', async () => {
    const { key, accountId } = await h.customer({ credits: 10 });
    const sent = (
      await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'ж'.repeat(80), send_at: at(MINUTE), callback_url: 'https://hooks.example.com/sms' } })
    ).json();
    assert.equal(sent.credits_used, 2);
    assert.equal(await balance(key), 8);
    const res = await cancel(key, sent.message_id);
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { status: 'success', data: { canceled: [sent.message_id], credits_refunded: 2 } });
    assert.equal(await balance(key), 10);
    const ledger = await h.ctx.store.db.selectFrom('credit_ledger').select(['kind', 'amount', 'note']).where('reference', '=', sent.message_id).orderBy('created_at').execute();
    assert.deepEqual(ledger, [
      { kind: 'debit', amount: -2, note: null },
      { kind: 'refund', amount: 2, note: 'canceled' },
    ]);
    const again = await cancel(key, sent.message_id);
    assert.equal(again.statusCode, 409);
    assert.equal(again.json().code, 'not_cancelable');

    h.clock.advance(MINUTE);
    await h.workers.drain();
    const report = (await h.request('GET', `/v1/sms/delivery-reports?status=canceled`, { key })).json();
    assert.deepEqual(report.data.map((r: { message_id: string; status: string; sent_at: null }) => [r.message_id, r.status, r.sent_at]), [[sent.message_id, 'canceled', null]]);
    const events = await h.ctx.store.db.selectFrom('webhook_events').select('id').where('account_id', '=', accountId).execute();
    assert.deepEqual(events, [], 'a canceled message raises no event');
    assert.equal(await balance(key), 10);
  });

  test('a message already released (or sent at once) is 409 not_cancelable, and keeps its credits debited', async () => {
    const { key } = await h.customer({ credits: 10 });
    const now = (await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'now' } })).json();
    const later = (await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'later', send_at: at(MINUTE) } })).json();
    h.clock.advance(MINUTE);
    await h.workers.drain();
    for (const id of [now.message_id, later.message_id]) {
      const res = await cancel(key, id);
      assert.equal(res.statusCode, 409, id);
      assert.equal(res.json().code, 'not_cancelable');
    }
    assert.equal(await balance(key), 8);
  });

  test('another account’s or an unknown message or batch is 404 not_found, and nothing changes', async () => {
    const owner = await h.customer({ credits: 10 });
    const other = await h.customer({ credits: 10 });
    const sent = (await h.request('POST', '/v1/sms/send', { key: owner.key, body: { to: '+447911123456', from: 'Acme', message: 'mine', send_at: at(MINUTE) } })).json();
    const bulk = (await h.request('POST', '/v1/sms/bulk', { key: owner.key, body: { from: 'Acme', send_at: at(MINUTE), messages: [{ to: '+447911123456', message: 'a' }] } })).json();
    for (const path of [sent.message_id, `batches/${bulk.batch_id}`, 'msg_nope', 'batches/bat_nope', 'x'.repeat(150), `batches/${'x'.repeat(150)}`]) {
      const res = await cancel(other.key, path);
      assert.equal(res.statusCode, 404, path);
      assert.equal(res.json().code, 'not_found', path);
    }
    assert.equal(await balance(owner.key), 8);
    const scheduled = (await h.request('GET', '/v1/sms/delivery-reports?status=scheduled', { key: owner.key })).json();
    assert.equal(scheduled.pagination.total, 2);
    const readOnly = await h.customer({ scopes: 'reports:read' });
    assert.equal((await cancel(readOnly.key, sent.message_id)).statusCode, 403, 'needs sms:send');
  });

  test('a batch: what is still scheduled is canceled in one refund; then 409; a batch sent at once is 409', async () => {
    const { key, accountId } = await h.customer({ credits: 20 });
    const messages = [
      { to: '+447911123456', message: 'a' },
      { to: 'bad', message: 'b' },
      { to: '+447911123457', message: 'c'.repeat(170) },
      { to: '+447911123458', message: 'd' },
    ];
    const bulk = (await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', send_at: at(MINUTE), messages } })).json();
    assert.equal(bulk.credits_used, 4);
    // One of them is canceled on its own first.
    const single = bulk.messages[2].message_id;
    assert.equal((await cancel(key, single)).json().data.credits_refunded, 1);
    const res = await cancel(key, `batches/${bulk.batch_id}`);
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.deepEqual([...body.data.canceled].sort(), [bulk.messages[0].message_id, bulk.messages[1].message_id].sort());
    assert.equal(body.data.credits_refunded, 3);
    assert.equal(await balance(key), 20);
    const refunds = await h.ctx.store.db.selectFrom('credit_ledger').select(['amount', 'reference']).where('account_id', '=', accountId).where('kind', '=', 'refund').execute();
    assert.deepEqual(refunds.map((r) => [r.amount, r.reference]).sort(), [
      [1, single],
      [3, bulk.batch_id],
    ]);
    const again = await cancel(key, `batches/${bulk.batch_id}`);
    assert.equal(again.statusCode, 409);
    assert.equal(again.json().code, 'not_cancelable');
    const canceled = (await h.request('GET', `/v1/sms/delivery-reports?batch_id=${bulk.batch_id}&status=canceled`, { key })).json();
    assert.equal(canceled.pagination.total, 3);

    const now = (await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', messages: [messages[0]] } })).json();
    assert.equal((await cancel(key, `batches/${now.batch_id}`)).json().code, 'not_cancelable');
  });

  test('a cancel racing the release: each message ends either canceled and refunded or released, never both', async () => {
    const { key } = await h.customer({ credits: 100 });
    const messages = Array.from({ length: 40 }, (_, i) => ({ to: `+4479111234${String(i).padStart(2, '0')}`, message: `m${i}` }));
    const bulk = (await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', send_at: at(MINUTE), messages } })).json();
    h.clock.advance(MINUTE);
    const [canceled] = await Promise.all([cancel(key, `batches/${bulk.batch_id}`), new Scheduler(h.ctx, { batchSize: 7 }).drain()]);
    const n = canceled.statusCode === 200 ? canceled.json().data.canceled.length : 0;
    if (canceled.statusCode !== 200) assert.equal(canceled.json().code, 'not_cancelable');
    const rows = await h.ctx.store.db.selectFrom('messages').select('status').where('batch_id', '=', bulk.batch_id).execute();
    assert.equal(rows.filter((r) => r.status === 'canceled').length, n);
    assert.equal(rows.filter((r) => r.status === 'pending').length, 40 - n);
    const jobs = await h.ctx.store.db.selectFrom('jobs').select('ref').where('queue', '=', 'dispatch').where('ref', 'in', bulk.messages.map((m: { message_id: string }) => m.message_id)).execute();
    assert.equal(jobs.length, 40 - n, 'only the released ones are queued');
    assert.equal(await balance(key), 60 + n);
    await h.workers.drain();
  });

  test('many cancels racing two schedulers: every answer is 200 or 409, each message canceled and refunded or released, the ledger exact', async () => {
    const { key, accountId } = await h.customer({ credits: 1000 });
    const batches = [];
    for (let b = 0; b < 6; b++) {
      const messages = Array.from({ length: 20 }, (_, i) => ({ to: `+4479111${b}${String(1000 + i)}`, message: i % 3 === 0 ? 'x'.repeat(200) : `m${i}` }));
      batches.push((await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', send_at: at(MINUTE), messages } })).json());
    }
    const segments = new Map<string, number>(batches.flatMap((b) => b.messages.map((m: { message_id: string; segments: number }) => [m.message_id, m.segments])));
    const debited = [...segments.values()].reduce((n, s) => n + s, 0);
    assert.equal(await balance(key), 1000 - debited);
    h.clock.advance(MINUTE);
    // Half the batches canceled whole, the others one message at a time, in reverse order (the
    // schedulers release in id order), while two schedulers release in small batches.
    const cancels = [
      ...batches.slice(0, 3).map((b) => `batches/${b.batch_id}`),
      ...batches.slice(3).flatMap((b) => b.messages.map((m: { message_id: string }) => m.message_id).reverse()),
    ];
    const [answers] = await Promise.all([Promise.all(cancels.map((path) => cancel(key, path))), new Scheduler(h.ctx, { batchSize: 7 }).drain(), new Scheduler(h.ctx, { batchSize: 5 }).drain()]);
    let refunded = 0;
    const canceled = new Set<string>();
    for (const res of answers) {
      if (res.statusCode === 409) {
        assert.equal(res.json().code, 'not_cancelable');
        continue;
      }
      assert.equal(res.statusCode, 200, res.body);
      const { data } = res.json();
      for (const id of data.canceled) {
        assert.ok(!canceled.has(id), `${id} canceled once`);
        canceled.add(id);
      }
      assert.equal(data.credits_refunded, data.canceled.reduce((n: number, id: string) => n + segments.get(id)!, 0), 'the refund is the canceled messages’ segments');
      refunded += data.credits_refunded;
    }
    const rows = await h.ctx.store.db.selectFrom('messages').select(['id', 'status']).where('id', 'in', [...segments.keys()]).execute();
    for (const row of rows) assert.equal(row.status, canceled.has(row.id) ? 'canceled' : 'pending', row.id);
    const jobs = await h.ctx.store.db.selectFrom('jobs').select('ref').where('queue', '=', 'dispatch').where('ref', 'in', [...segments.keys()]).execute();
    assert.deepEqual(jobs.map((j) => j.ref).sort(), rows.filter((r) => !canceled.has(r.id)).map((r) => r.id).sort(), 'a dispatch job for each released message, none for a canceled one');
    const refunds = await h.ctx.store.db.selectFrom('credit_ledger').select('amount').where('account_id', '=', accountId).where('kind', '=', 'refund').execute();
    assert.equal(refunds.reduce((n, r) => n + Number(r.amount), 0), refunded, 'the ledger’s refunds are what the answers said');
    assert.equal(await balance(key), 1000 - debited + refunded);
    await h.workers.drain();
  });

  test('a cancel that PostgreSQL aborts to break a deadlock is run again: 200, the exact refund, one ledger row', { skip: testDialect !== 'postgres' && 'PostgreSQL aborts a deadlock victim; SQLite writers wait their turn' }, async () => {
    const { key, accountId } = await h.customer({ credits: 10 });
    const messages = [
      { to: '+447911123456', message: 'a' },
      { to: '+447911123457', message: 'b'.repeat(200) },
    ];
    const bulk = (await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', send_at: at(10_000), messages } })).json();
    assert.equal(bulk.credits_used, 3);
    const [first, second] = bulk.messages.map((m: { message_id: string }) => `jobrel_${m.message_id}`).sort() as [string, string];
    assert.equal((await stageUpcomingDispatch(h.ctx, undefined, 100)).looked, 2, 'both dispatch jobs staged');
    const waitingOnLock = async () => Number((await sql<{ n: string }>`select count(*) as n from pg_locks where not granted`.execute(h.ctx.store.db)).rows[0]!.n) > 0;
    // Another transaction takes the two staged jobs in the opposite order to the cancel's (which
    // holds the messages and takes back their jobs in id order): each waits on the other. Its own
    // deadlock check comes late, so PostgreSQL aborts the cancel.
    let canceled!: Promise<Awaited<ReturnType<typeof cancel>>>;
    await h.ctx.store.db.transaction().execute(async (trx) => {
      await sql`set local deadlock_timeout = '30s'`.execute(trx);
      await deferJobs(trx, [second], h.clock.now() + 1000);
      canceled = cancel(key, `batches/${bulk.batch_id}`);
      await waitFor(waitingOnLock, { message: 'the cancel waiting on the second job' });
      await deferJobs(trx, [first], h.clock.now() + 1000);
    });
    const res = await canceled;
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().data.credits_refunded, 3);
    assert.equal(res.json().data.canceled.length, 2);
    assert.equal(await balance(key), 10);
    const refunds = await h.ctx.store.db.selectFrom('credit_ledger').select(['amount', 'reference', 'note']).where('account_id', '=', accountId).where('kind', '=', 'refund').execute();
    assert.deepEqual(refunds, [{ amount: 3, reference: bulk.batch_id, note: 'canceled' }], 'one refund: the aborted try wrote nothing');
    assert.deepEqual(await h.ctx.store.db.selectFrom('jobs').select('id').where('id', 'in', [first, second]).execute(), [], 'both staged jobs taken back');
  });
});

describe('validity period', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.close());

  const send = async (key: string, extra: Record<string, unknown>) => {
    const res = await h.request('POST', '/v1/sms/send', { key, body: { to: '+447911123456', from: 'Acme', message: 'hi', callback_url: 'https://hooks.example.com/sms', ...extra } });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().message_id as string;
  };
  async function report(key: string, id: string) {
    return (await h.request('GET', `/v1/sms/delivery-reports?message_id=${id}`, { key })).json().data[0];
  }
  async function balance(key: string) {
    return (await h.request('GET', '/v1/account', { key })).json().data.credits_remaining as number;
  }
  const events = async (id: string) => (await h.ctx.store.db.selectFrom('webhook_events').select('event').where('message_id', '=', id).orderBy('created_at').execute()).map((e) => e.event);

  test('a receipt that never comes (simulator 1111): failed with expired when the period ends, not refunded', async () => {
    const { key } = await h.customer({ credits: 10 });
    const id = await send(key, { to: '+447911121111', validity_period: 60 });
    await h.workers.drain();
    assert.equal((await report(key, id)).status, 'sent');
    h.clock.advance(59_999);
    await h.workers.drain();
    assert.equal((await report(key, id)).status, 'sent', 'not before the end of the period');
    h.clock.advance(1);
    await h.workers.drain();
    const r = await report(key, id);
    assert.equal(r.status, 'failed');
    assert.equal(r.error_code, 'expired');
    assert.notEqual(r.sent_at, null);
    assert.equal(await balance(key), 9, 'it left: no refund');
    assert.deepEqual(await events(id), ['sms.sent', 'sms.failed']);
  });

  test('a message within its period is delivered as usual', async () => {
    const { key } = await h.customer({ credits: 10 });
    const id = await send(key, { validity_period: 60 });
    await h.workers.drain();
    h.clock.advance(1000);
    await h.workers.drain();
    assert.equal((await report(key, id)).status, 'delivered');
  });

  test('not dispatched within the period: failed with expired, refunded, never handed to the carrier', async () => {
    const { key } = await h.customer({ credits: 10 });
    const id = await send(key, { validity_period: 60 });
    assert.equal(await balance(key), 9);
    h.clock.advance(60_000);
    await h.workers.drain();
    const r = await report(key, id);
    assert.equal(r.status, 'failed');
    assert.equal(r.error_code, 'expired');
    assert.equal(r.sent_at, null);
    assert.equal(h.carrier.submitted.get(id), undefined, 'never submitted');
    assert.equal(await balance(key), 10, 'refunded');
    assert.deepEqual(await events(id), ['sms.failed']);
  });

  test('the sweep fails a message still waiting in the dispatch queue after its period, with a refund', async () => {
    const { key } = await h.customer({ credits: 10 });
    const id = await send(key, { validity_period: 120 });
    h.clock.advance(120_000);
    assert.equal(await expireValidityPeriods(h.ctx), 1);
    assert.equal((await report(key, id)).error_code, 'expired');
    assert.equal(await balance(key), 10);
    await h.workers.drain();
    assert.equal(h.carrier.submitted.get(id), undefined, 'its dispatch job found it failed');
  });

  const bulk = async (key: string, body: Record<string, unknown>) => {
    const res = await h.request('POST', '/v1/sms/bulk', { key, body: { from: 'Acme', callback_url: 'https://hooks.example.com/sms', ...body } });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { batch_id: string; validity_period?: number; send_at?: string; credits_used: number; messages: { message_id: string; to: string; segments: number }[] };
  };
  const stored = async (batchId: string) =>
    (await h.ctx.store.db.selectFrom('messages').select(['recipient', 'validity_period', 'expires_at']).where('batch_id', '=', batchId).orderBy('recipient').execute()).map((m) => [m.recipient, Number(m.validity_period), Number(m.expires_at)]);

  test('bulk: the top-level validity_period is echoed and stored for every message; not dispatched within it, each fails expired and is refunded', async () => {
    const { key, accountId } = await h.customer({ credits: 10 });
    const accepted = h.clock.now();
    const res = await bulk(key, { validity_period: 90, messages: [{ to: '+447911123456', message: 'a' }, { to: '+447911123457', message: 'b'.repeat(200) }, { to: 'nope', message: 'c' }] });
    assert.equal(res.validity_period, 90, 'echoed at the top level, as on a single send');
    assert.equal(res.send_at, undefined);
    assert.equal(res.credits_used, 3);
    assert.deepEqual(await stored(res.batch_id), [
      ['+447911123456', 90, accepted + 90_000],
      ['+447911123457', 90, accepted + 90_000],
    ]);
    h.clock.advance(90_000);
    await h.workers.drain();
    for (const { message_id } of res.messages) {
      const r = await report(key, message_id);
      assert.deepEqual([r.status, r.error_code, r.sent_at], ['failed', 'expired', null], message_id);
      assert.equal(h.carrier.submitted.get(message_id), undefined, 'never handed to the carrier');
      assert.deepEqual(await events(message_id), ['sms.failed']);
    }
    assert.equal(await balance(key), 10, 'all three credits back');
    const refunds = await h.ctx.store.db.selectFrom('credit_ledger').select(['amount', 'note']).where('account_id', '=', accountId).where('kind', '=', 'refund').execute();
    assert.deepEqual(refunds.map((r) => [r.amount, r.note]).sort(), [
      [1, 'expired'],
      [2, 'expired'],
    ]);
  });

  test('bulk with send_at: the period counts from send_at; released late past it, failed expired and refunded; a 1111 recipient sent in time expires unrefunded', async () => {
    const { key } = await h.customer({ credits: 10 });
    const sendAt = h.clock.now() + 10 * MINUTE;
    const long = await bulk(key, { send_at: new Date(sendAt).toISOString(), validity_period: 120, messages: [{ to: '+447911123456', message: 'a' }, { to: '+447911121111', message: 'b' }] });
    const short = await bulk(key, { send_at: new Date(sendAt).toISOString(), validity_period: 60, messages: [{ to: '+447911123458', message: 'c' }, { to: '+447911123459', message: 'd' }] });
    assert.deepEqual([long.validity_period, long.send_at], [120, new Date(sendAt).toISOString()]);
    assert.deepEqual(await stored(long.batch_id), [
      ['+447911121111', 120, sendAt + 120_000],
      ['+447911123456', 120, sendAt + 120_000],
    ]);
    assert.deepEqual(await stored(short.batch_id), [
      ['+447911123458', 60, sendAt + 60_000],
      ['+447911123459', 60, sendAt + 60_000],
    ]);
    assert.equal(await balance(key), 6);
    // Nothing ran from acceptance until a minute after send_at: ten minutes and more since
    // acceptance, within the long period counted from send_at, at the end of the short one.
    h.clock.ms = sendAt + 60_000;
    await h.workers.drain();
    const [delivered, neverConfirmed] = long.messages.map((m) => m.message_id) as [string, string];
    assert.equal((await report(key, delivered)).status, 'sent');
    assert.equal((await report(key, neverConfirmed)).status, 'sent');
    for (const { message_id } of short.messages) {
      const r = await report(key, message_id);
      assert.deepEqual([r.status, r.error_code, r.sent_at], ['failed', 'expired', null], message_id);
      assert.equal(h.carrier.submitted.get(message_id), undefined);
    }
    assert.equal(await balance(key), 8, 'the late batch refunded');
    h.clock.advance(1000);
    await h.workers.drain();
    assert.equal((await report(key, delivered)).status, 'delivered');
    h.clock.ms = sendAt + 120_000 - 1;
    await h.workers.drain();
    assert.equal((await report(key, neverConfirmed)).status, 'sent', 'not before the end of its period');
    h.clock.ms = sendAt + 120_000;
    await h.workers.drain();
    const r = await report(key, neverConfirmed);
    assert.deepEqual([r.status, r.error_code], ['failed', 'expired']);
    assert.notEqual(r.sent_at, null);
    assert.equal(await balance(key), 8, 'it left: no refund');
    assert.deepEqual(await events(neverConfirmed), ['sms.sent', 'sms.failed']);
  });

  test('counted from send_at: a scheduled message is not expired by the wait before its time', async () => {
    const { key } = await h.customer({ credits: 10 });
    const id = await send(key, { validity_period: 60, send_at: new Date(h.clock.now() + 10 * MINUTE).toISOString() });
    h.clock.advance(10 * MINUTE + 30_000);
    await h.workers.drain();
    assert.equal((await report(key, id)).status, 'sent');
    h.clock.advance(1000);
    await h.workers.drain();
    assert.equal((await report(key, id)).status, 'delivered');
  });
});
