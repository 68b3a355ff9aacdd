/**
 * Pigeon against an SMSC that does not share its SMPP library: test/smpp/interop/smsc.pl, written
 * with Perl's Net::SMPP. Everything listens and connects on 127.0.0.1.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { claimJobs } from '../../../src/store/repositories/jobs.repository.ts';
import { applyReceiptJobs } from '../../../src/services/messages/record-delivery-reports.ts';
import { openStore } from '../../../src/store/connect.ts';
import { migrateToLatest } from '../../../src/store/migrate.ts';
import { startPigeon } from '../../helpers/processes.ts';
import { smppPigeon, type SmppPigeon } from '../pigeon-smpp.ts';
import { decodeSubmit, PerlSmsc, type SubmitEvent } from './perl-smsc.ts';
import { waitFor } from '../../helpers/wait-for.ts';

const GSM_LONG = 'Prices: {10} [EUR] €5 ~ 20^2 | back\\slash. '.repeat(6);
const UCS_LONG = 'Grüße aus Köln 🐦🎉 — ça marche! '.repeat(5);

async function setup(opts: { ids?: 'decimal' | 'hex'; firstId?: number; receiptIds?: 'same' | 'other'; env?: Record<string, string> } = {}) {
  const smsc = await PerlSmsc.start({ ids: opts.ids, firstId: opts.firstId, receiptIds: opts.receiptIds });
  const p = await smppPigeon({ SMPP_HOST: '127.0.0.1', SMPP_PORT: String(smsc.port), SMPP_WINDOW: '10', ...opts.env });
  const customer = await p.h.customer({ credits: 10_000 });
  return { smsc, p, key: customer.key, accountId: customer.accountId as string | undefined };
}

const status = async (p: SmppPigeon, id: string) => (await p.message(id)).status;

/** Reassembles the acknowledged parts sent to one destination, in part order. */
function reassemble(parts: SubmitEvent[]): string {
  return parts
    .map(decodeSubmit)
    .sort((a, b) => a.seq - b.seq)
    .map((d) => d.text)
    .join('');
}

describe('interop (Net::SMPP): encodings, receipts, throttling', () => {
  let smsc: PerlSmsc;
  let p: SmppPigeon;
  let key: string;
  before(async () => ({ smsc, p, key } = await setup({ ids: 'hex', firstId: 0x1a2b00 })));
  after(async () => {
    await p?.close();
    await smsc?.stop();
  });

  test('multi-part GSM-7 with escapes and UCS-2 with emoji: the bytes the SMSC read decode back to the text', async () => {
    const gsm = await p.send(key, '+447911500001', GSM_LONG);
    const ucs = await p.send(key, '+447911500002', UCS_LONG);
    await p.settle(async () => (await status(p, gsm)) === 'sent' && (await status(p, ucs)) === 'sent', 'sent');
    const g = smsc.submitsTo('447911500001');
    assert.equal(g.length, (await p.message(gsm)).segments);
    assert.ok(g.length > 1);
    assert.ok(g.every((s) => s.dcs === 0 && (s.esm & 0x40) === 0x40 && s.rd === 1 && s.src === 'Acme'));
    assert.equal(new Set(g.map((s) => decodeSubmit(s).ref)).size, 1, 'one concatenation reference');
    assert.deepEqual(g.map((s) => decodeSubmit(s).seq), g.map((_, i) => i + 1));
    assert.equal(reassemble(g), GSM_LONG);
    const u = smsc.submitsTo('447911500002');
    assert.equal(u.length, (await p.message(ucs)).segments);
    assert.ok(u.every((s) => s.dcs === 8));
    assert.equal(reassemble(u), UCS_LONG, 'no emoji split between parts');
  });

  for (const format of ['text', 'tlv', 'both'] as const) {
    test(`hex ids: ${format} receipts, delivered and failed`, async () => {
      const a = await p.send(key, '+447911500010', `receipt ${format} a`);
      const b = await p.send(key, '+447911500011', `receipt ${format} b`);
      await p.settle(async () => (await status(p, a)) === 'sent' && (await status(p, b)) === 'sent', 'sent');
      const answered = smsc.count('deliver_sm_resp');
      await smsc.receipt(smsc.submitsTo('447911500010').at(-1)!.id!, 'DELIVRD', format);
      await smsc.receipt(smsc.submitsTo('447911500011').at(-1)!.id!, 'UNDELIV', format);
      await p.settle(async () => (await status(p, a)) === 'delivered' && (await status(p, b)) === 'failed', 'receipts applied');
      assert.equal((await p.message(b)).error_code, 'undeliverable');
      // A receipt is stored before its deliver_sm_resp is written: the SMSC reads the answers
      // after the statuses change, so they are awaited rather than expected at once.
      await waitFor(() => smsc.count('deliver_sm_resp') >= answered + 2, { timeout: 20_000, message: 'both receipts answered' });
      const answers = smsc.events.filter((e) => e.ev === 'deliver_sm_resp');
      assert.ok(answers.every((e) => e.status === 0), JSON.stringify(answers));
    });
  }

  test('0x58 and 0x14 are retried: every message accepted once, charged once, none failed', async () => {
    const before = smsc.submits.length;
    await smsc.next('status:88', 'status:20', 'status:88');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await p.send(key, `+44791150002${i}`, `throttled ${i}`));
    await p.settle(async () => (await Promise.all(ids.map((id) => status(p, id)))).every((s) => s === 'sent'), 'all sent');
    const submits = smsc.submits.slice(before);
    assert.equal(submits.filter((s) => s.status === 88 || s.status === 20).length, 3);
    const accepted = submits.filter((s) => s.status === 0).map((s) => s.dst);
    assert.equal(accepted.length, 5);
    assert.equal(new Set(accepted).size, 5, 'no message accepted twice');
    const debits = await p.h.ctx.store.db.selectFrom('credit_ledger').select('kind').where('reference', 'in', ids).execute();
    assert.deepEqual(debits.map((d) => d.kind).filter((k) => k !== 'debit'), [], 'no refund, no second debit');
  });

  test('with a window above 1, a throttled part is accepted before the later parts of its message', async () => {
    const before = smsc.submits.length;
    await smsc.next('ok', 'status:88');
    const id = await p.send(key, '+447911500030', 'o'.repeat(153 * 3));
    await p.settle(async () => (await status(p, id)) === 'sent', 'sent');
    const accepted = smsc.submits.slice(before).filter((s) => s.status === 0);
    assert.deepEqual(accepted.map((s) => decodeSubmit(s).seq), [1, 2, 3], 'accepted in part order');
  });
});

describe('interop (Net::SMPP): decimal ids and receipts that race the commit', () => {
  let smsc: PerlSmsc;
  let p: SmppPigeon;
  let key: string;
  before(async () => ({ smsc, p, key } = await setup({ ids: 'decimal', firstId: 11 })));
  after(async () => {
    await p?.close();
    await smsc?.stop();
  });

  test('a receipt that arrives before its submit is committed changes only the message whose id it names', async () => {
    // Message `11` is stored; `11` read as hexadecimal is 17.
    const eleven = await p.send(key, '+447911600011', 'eleven');
    await p.settle(async () => (await status(p, eleven)) === 'sent', 'sent');
    assert.equal((await p.message(eleven)).carrier_message_id, '11');
    const others: string[] = [];
    for (let i = 12; i <= 16; i++) others.push(await p.send(key, `+4479116000${i}`, `number ${i}`));
    await p.settle(async () => (await Promise.all(others.map((id) => status(p, id)))).every((s) => s === 'sent'), 'sent');

    // `17`: the SMSC sends its receipt first and holds the submit_sm_resp back.
    await smsc.next('receipt-hold');
    const seventeen = await p.send(key, '+447911600017', 'seventeen');
    const dispatching = p.workers.drain();
    await smsc.waitFor((e) => e.ev === 'deliver_sm_resp', 'the receipt to be answered');
    const receipts = await claimJobs(p.h.ctx.store.db, 'receipt', 100, p.h.clock.now(), 60_000);
    assert.equal(receipts.length, 1);
    await applyReceiptJobs(p.h.ctx, receipts);
    assert.equal(await status(p, eleven), 'sent', 'message 11 untouched');
    await smsc.command({ cmd: 'release' });
    await dispatching;
    assert.equal(await status(p, seventeen), 'sent');
    for (const until = Date.now() + 20_000; (await status(p, seventeen)) !== 'delivered' && Date.now() < until; ) {
      p.h.clock.advance(1000);
      await p.workers.drain();
    }
    assert.equal(await status(p, seventeen), 'delivered');
    assert.equal(await status(p, eleven), 'sent');
  });

  test('a receipt overtaking its answer (text and TLV) is applied once the submit commits', async () => {
    for (const action of ['receipt-first', 'receipt-tlv-first'] as const) {
      await smsc.next(action);
      const id = await p.send(key, '+447911600099', `early ${action}`);
      for (const until = Date.now() + 20_000; (await status(p, id)) !== 'delivered' && Date.now() < until; ) {
        await p.workers.drain();
        p.h.clock.advance(1000);
      }
      assert.equal(await status(p, id), 'delivered', action);
    }
  });
});

describe('interop (Net::SMPP): resets, half-close, resubmission', () => {
  let smsc: PerlSmsc;
  let p: SmppPigeon;
  let key: string;
  before(async () => ({ smsc, p, key } = await setup({ ids: 'decimal', firstId: 5000, env: { SMPP_WINDOW: '1' } })));
  after(async () => {
    await p?.close();
    await smsc?.stop();
  });

  const rebound = async (binds: number) => p.settle(() => smsc.count('bind') > binds && p.carrier.status().ready, 'rebound');

  /** Drives dispatch (moving the clock past retry delays) until the message leaves `pending`. */
  async function untilDispatched(id: string): Promise<void> {
    for (const until = Date.now() + 8000; (await status(p, id)) === 'pending' && Date.now() < until; ) {
      await p.workers.drain();
      if (!p.carrier.status().ready) await new Promise((resolve) => setTimeout(resolve, 5));
      else p.h.clock.advance(1000);
    }
  }

  test('a half-close after an answer: no PDU is written to the ended side, the rest goes after the rebind', async () => {
    const binds = smsc.count('bind');
    await smsc.next('hold');
    const id = await p.send(key, '+447911700002', 'h'.repeat(153 * 3));
    const dispatching = p.workers.drain();
    await smsc.waitFor((e) => e.ev === 'submit' && e.dst === '447911700002' && e.held === true, 'part 1 held');
    // The answer and the SMSC's end of the connection arrive together, while Pigeon is busy.
    smsc.commandWhileBusy({ cmd: 'release', then: 'halfclose' });
    await dispatching;
    await untilDispatched(id);
    await rebound(binds);
    assert.equal(await status(p, id), 'sent');
    const parts = smsc.submitsTo('447911700002');
    assert.deepEqual(parts.map((s) => decodeSubmit(s).seq), [1, 2, 3], 'nothing was written after the SMSC ended its side');
    assert.notEqual(parts[0]!.bind, parts[1]!.bind, 'the rest went over the new bind');
  });

  test('a part lost with the connection is resubmitted once, after the rebind, with the original reference', async () => {
    const binds = smsc.count('bind');
    await smsc.next('silent-reset');
    const id = await p.send(key, '+447911700003', 'l'.repeat(153 * 3));
    await untilDispatched(id);
    await rebound(binds);
    assert.equal(await status(p, id), 'sent');
    const parts = smsc.submitsTo('447911700003');
    assert.deepEqual(parts.map((s) => decodeSubmit(s).seq), [1, 1, 2, 3]);
    assert.equal(parts[0]!.id, null, 'the first copy of part 1 was never answered');
    assert.equal(new Set(parts.map((s) => decodeSubmit(s).ref)).size, 1, 'the resubmission keeps the concatenation reference');
    assert.ok(parts[1]!.bind > parts[0]!.bind, 'resubmitted after the rebind');
  });

  test('a single-part message lost twice: no third submit, failed with smpp_no_response and refunded', async () => {
    const binds = smsc.count('bind');
    await smsc.next('silent-reset', 'silent-reset');
    const id = await p.send(key, '+447911700004', 'lost twice');
    for (const until = Date.now() + 8000; (await status(p, id)) === 'pending' && Date.now() < until; ) {
      await p.workers.drain();
      await new Promise((resolve) => setTimeout(resolve, 5));
      p.h.clock.advance(1000);
    }
    const m = await p.message(id);
    assert.equal(m.status, 'failed');
    assert.equal(m.error_code, 'smpp_no_response');
    assert.equal(m.sent_at, null);
    assert.equal(smsc.submitsTo('447911700004').length, 2, 'exactly two submits');
    const ledger = await p.h.ctx.store.db.selectFrom('credit_ledger').select('kind').where('reference', '=', id).execute();
    assert.deepEqual(ledger.map((r) => r.kind).sort(), ['debit', 'refund']);
    await rebound(binds);
  });
});

describe('interop (Net::SMPP): a reset right after an answer', () => {
  let smsc: PerlSmsc;
  let p: SmppPigeon;
  let key: string;
  before(async () => ({ smsc, p, key } = await setup({ ids: 'decimal', firstId: 7000 })));
  after(async () => {
    await p?.close();
    await smsc?.stop();
  });

  test('the answer that came before the reset counts: the message it answered is not submitted again', async () => {
    const binds = smsc.count('bind');
    await smsc.next('hold');
    const a = await p.send(key, '+447911800001', 'first');
    const dispatching = p.workers.drain();
    await smsc.waitFor((e) => e.ev === 'submit' && e.held === true, 'the held submit');
    // The answer and the reset arrive while Pigeon is busy; the next submit comes before Pigeon
    // has read its socket again, and its write fails on the reset connection.
    smsc.commandWhileBusy({ cmd: 'release', then: 'reset' });
    const other = p.carrier.submit([{ id: 'msg_interop_other', recipient: '+447911800002', sender: 'Acme', body: 'second', encoding: 'GSM-7', segments: 1 }]);
    await dispatching;
    await other;
    for (const until = Date.now() + 8000; (await status(p, a)) === 'pending' && Date.now() < until; ) {
      await p.workers.drain();
      if (!p.carrier.status().ready) await new Promise((resolve) => setTimeout(resolve, 5));
      else p.h.clock.advance(1000);
    }
    assert.equal(await status(p, a), 'sent');
    assert.equal(smsc.submitsTo('447911800001').length, 1, 'the answered message went once');
    await p.settle(() => smsc.count('bind') > binds && p.carrier.status().ready, 'rebound');
  });
});

describe('interop (Net::SMPP): an SMSC that quotes hex ids in decimal in its receipts', () => {
  let smsc: PerlSmsc;
  let p: SmppPigeon;
  let key: string;
  before(async () => ({ smsc, p, key } = await setup({ ids: 'hex', firstId: 0x2b00, receiptIds: 'other' })));
  after(async () => {
    await p?.close();
    await smsc?.stop();
  });

  test('learned from its receipts and stored for the route; then applied at once, even with submits in flight', async () => {
    const a = await p.send(key, '+447911900001', 'learn');
    await p.settle(async () => (await status(p, a)) === 'sent', 'sent');
    await smsc.receipt(smsc.submitsTo('447911900001')[0]!.id!, 'DELIVRD', 'tlv');
    await p.settle(async () => (await status(p, a)) === 'delivered', 'delivered through the converted id');
    const stored = await p.h.ctx.store.db.selectFrom('carrier_routes').selectAll().execute();
    assert.deepEqual(stored.map((r) => [r.route, r.receipt_ids]), [['default', 'hex_as_decimal']]);

    const c = await p.send(key, '+447911900002', 'known route');
    await p.settle(async () => (await status(p, c)) === 'sent', 'sent');
    // Another submit is held unanswered while the receipt for `c` arrives.
    await smsc.next('hold');
    const b = await p.send(key, '+447911900003', 'in flight');
    const dispatching = p.workers.drain();
    await smsc.waitFor((e) => e.ev === 'submit' && e.held === true, 'the held submit');
    await smsc.receipt(smsc.submitsTo('447911900002')[0]!.id!, 'UNDELIV', 'text');
    await smsc.waitFor(() => smsc.count('deliver_sm_resp') >= 2, 'the receipt answered');
    const receipts = await claimJobs(p.h.ctx.store.db, 'receipt', 100, p.h.clock.now(), 60_000);
    await applyReceiptJobs(p.h.ctx, receipts);
    assert.equal(await status(p, c), 'failed', 'applied at once');
    await smsc.command({ cmd: 'release' });
    await dispatching;
    assert.equal(await status(p, b), 'sent');
  });
});

describe('interop (Net::SMPP): shutdown', () => {
  let smsc: PerlSmsc;
  before(async () => {
    smsc = await PerlSmsc.start();
  });
  after(() => smsc?.stop());

  test('SIGTERM, and a second SIGTERM during the shutdown: the process still unbinds before it exits', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pigeon-smpp-interop-'));
    // A worker needs an existing database (only serve and migrate create one).
    const store = openStore(`sqlite:${join(dir, 'pigeon.db')}`);
    await migrateToLatest(store.db);
    await store.close();
    const pigeon = await startPigeon(['worker'], {
      CARRIER: 'smpp',
      SMPP_HOST: '127.0.0.1',
      SMPP_PORT: String(smsc.port),
      SMPP_SYSTEM_ID: 'pigeon',
      SMPP_PASSWORD: 'secret',
      DATABASE_URL: `sqlite:${join(dir, 'pigeon.db')}`,
    });
    try {
      await smsc.waitFor((e) => e.ev === 'bind', 'the bind');
      const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
        pigeon.child.once('exit', (code, signal) => resolve({ code, signal })),
      );
      pigeon.child.kill('SIGTERM');
      for (const until = Date.now() + 10_000; !pigeon.output().includes('"msg":"shutting down"'); ) {
        if (Date.now() > until) throw new Error(`no shutdown logged:\n${pigeon.output()}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      pigeon.child.kill('SIGTERM');
      const { code, signal } = await exited;
      assert.equal(signal, null, `killed by ${signal}:\n${pigeon.output()}`);
      assert.equal(code, 0);
      await smsc.waitFor((e) => e.ev === 'unbind', 'the unbind');
    } finally {
      await pigeon.kill();
    }
  });
});
