/**
 * Receipts to SMPP users (DECISIONS.md §10) over real TCP with the `smpp` package's client: the
 * Appendix B text and TLVs per part, as registered_delivery asks; kept in the database while no
 * receiver is bound and delivered in order on bind; round robin over binds with at most 10
 * unanswered each; temporary refusals and silence retried, other answers ending the delivery.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { PDU, Session } from 'smpp';
import { encodeGsm7 } from '../../src/carriers/smpp/gsm7.ts';
import { listSmppUsers } from '../../src/services/smpp-access/smpp-users.ts';
import { enqueuePartsRejections, type DeliverFields } from '../../src/services/smpp-access/smpp-outbox.ts';
import { OutboxPump } from '../../src/smpp-server/outbox-pump.ts';
import type { DeliverAnswer, ReceivingBind } from '../../src/smpp-server/session-host.ts';
import { assignNumber } from '../../src/services/numbers/numbers.ts';
import { receiveInbound } from '../../src/services/inbound/inbound.ts';
import { bound, call, closed, serverFixture, waitFor, type ServerFixture } from './server-fixture.ts';

let f: ServerFixture;
before(async () => {
  f = await serverFixture();
});
after(async () => {
  await f.close();
});

interface Received {
  pdu: PDU;
  text: string;
}

/** A receiver that records each deliver_sm and answers it with `answer(pdu)` (null: no answer). */
function recording(session: Session, answer: (pdu: PDU) => number | null = () => 0): Received[] {
  const got: Received[] = [];
  session.on('deliver_sm', (pdu: PDU) => {
    got.push({ pdu, text: String((pdu.short_message as { message: string }).message) });
    const status = answer(pdu);
    if (status !== null) session.send(pdu.response({ command_status: status }));
  });
  return got;
}

async function waiting(systemId: string): Promise<number> {
  return (await listSmppUsers(f.h.ctx)).find((u) => u.system_id === systemId)!.waiting;
}

const deliver = async () => {
  await f.h.workers.drain();
  f.h.clock.advance(1000);
  await f.h.workers.drain();
};

test('receipts wait for a receiver bind, then come in order: ENROUTE and the final state for every part, as registered_delivery asks', async () => {
  const user = await f.user();
  const tx = await bound(f.port, user, 'bind_transmitter');
  const submit = async (fields: Record<string, unknown>) => {
    const answer = await call(tx, 'submit_sm', { source_addr_ton: 5, source_addr: 'Acme', dest_addr_ton: 1, destination_addr: '447700900001', ...fields });
    assert.equal(answer.command_status, 0);
    return String(answer.message_id);
  };
  const udh = (seq: number) => Buffer.from([5, 0, 3, 9, 2, seq]);
  const part1 = await submit({ registered_delivery: 0x11, esm_class: 0x40, short_message: Buffer.concat([udh(1), encodeGsm7('a'.repeat(153))]) });
  const part2 = await submit({ registered_delivery: 0x11, esm_class: 0x40, short_message: Buffer.concat([udh(2), encodeGsm7('tail')]) });
  const failedId = await submit({ registered_delivery: 2, destination_addr: '447700900000', short_message: encodeGsm7('to fail') });
  await submit({ registered_delivery: 2, short_message: encodeGsm7('delivered, failures only asked') });
  await submit({ registered_delivery: 0, short_message: encodeGsm7('nothing asked') });
  await deliver();
  assert.equal(await waiting(user.system_id), 5, 'ENROUTE and DELIVRD for two parts, UNDELIV for one');

  let got: Received[] = [];
  const rx = await bound(f.port, user, 'bind_receiver', undefined, (s) => (got = recording(s)));
  await waitFor(() => got.length === 5, { message: () => `five receipts, got ${got.length}` });
  await waitFor(async () => (await waiting(user.system_id)) === 0, { message: 'the answered receipts removed' });
  const summary = got.map((r) => [r.pdu.receipted_message_id, r.pdu.message_state]);
  assert.deepEqual(summary, [
    [part1, 1],
    [part2, 1],
    [part1, 2],
    [part2, 2],
    [failedId, 5],
  ]);
  const final = got[2]!;
  assert.equal(final.pdu.esm_class, 0x04);
  assert.equal(final.pdu.source_addr, '447700900001');
  assert.equal(final.pdu.destination_addr, 'Acme');
  assert.match(final.text, new RegExp(`^id:${part1} sub:001 dlvrd:001 submit date:2603011200 done date:\\d{10} stat:DELIVRD err:000 text:a{20}$`));
  assert.match(got[4]!.text, /stat:UNDELIV .*text:to fail$/);
  for (const s of [tx, rx]) s.close();
  await Promise.all([tx, rx].map(closed));
});

test('a canceled scheduled message gets DELETED', async () => {
  const user = await f.user();
  let got: Received[] = [];
  const trx = await bound(f.port, user, 'bind_transceiver', undefined, (s) => (got = recording(s)));
  const answer = await call(trx, 'submit_sm', {
    source_addr_ton: 5,
    source_addr: 'Acme',
    dest_addr_ton: 1,
    destination_addr: '447700900001',
    registered_delivery: 1,
    schedule_delivery_time: '000000010000000R',
    short_message: encodeGsm7('later'),
  });
  assert.equal(answer.command_status, 0);
  const canceled = await f.h.request('POST', `/v1/sms/${answer.message_id}/cancel`, { key: user.key });
  assert.equal(canceled.statusCode, 200, canceled.body);
  await waitFor(() => got.length === 1);
  assert.deepEqual([got[0]!.pdu.receipted_message_id, got[0]!.pdu.message_state], [answer.message_id, 4]);
  assert.match(got[0]!.text, /stat:DELETED/);
  trx.close();
  await closed(trx);
});

test('round robin over receiver binds, at most 10 unanswered each; the rest follow as answers come', async () => {
  const user = await f.user();
  const held: { session: Session; pdu: PDU }[] = [];
  let gotA: Received[] = [];
  let gotB: Received[] = [];
  const a = await bound(f.port, user, 'bind_receiver', undefined, (s) => (gotA = recording(s, (pdu) => (held.push({ session: s, pdu }), null))));
  const b = await bound(f.port, user, 'bind_transceiver', undefined, (s) => (gotB = recording(s, (pdu) => (held.push({ session: s, pdu }), null))));
  const ids = Array.from({ length: 25 }, (_, i) => `id${String(i).padStart(2, '0')}`);
  await enqueuePartsRejections(f.h.ctx, [{ systemId: user.system_id, partIds: ids, text: 'x', registeredDelivery: 1, sourceAddr: 'Acme', sourceTon: 5, destinationAddr: '+447700900001' }]);
  await waitFor(() => gotA.length === 10 && gotB.length === 10, { message: () => `10 each, got ${gotA.length} and ${gotB.length}` });
  const sessions = f.server.boundSessions(user.system_id);
  assert.deepEqual(sessions.map((s) => s.deliveriesInFlight), [10, 10]);
  for (const { session, pdu } of held.splice(0)) session.send(pdu.response());
  await waitFor(() => gotA.length + gotB.length === 25, { message: () => `25 in all, got ${gotA.length + gotB.length}` });
  for (const { session, pdu } of held.splice(0)) session.send(pdu.response());
  assert.deepEqual([...gotA, ...gotB].map((r) => String(r.pdu.receipted_message_id)).sort(), ids);
  await waitFor(async () => (await waiting(user.system_id)) === 0);
  for (const s of [a, b]) s.close();
  await Promise.all([a, b].map(closed));
});

test('0x58, 0x14 and 0x08 are retried after a back-off, so is silence; another refusal ends the delivery', async () => {
  const user = await f.user();
  let got: Received[] = [];
  const answers = new Map<string, number[]>([
    ['throttled', [0x58, 0]],
    ['queue-full', [0x14, 0]],
    ['syserr', [0x08, 0]],
    ['silent', [-1, 0]],
    ['refused', [0x45]],
  ]);
  const rx = await bound(f.port, user, 'bind_receiver', undefined, (s) => {
    got = recording(s, (pdu) => {
      const plan = answers.get(String(pdu.receipted_message_id))!;
      const status = plan.shift() ?? 0;
      return status === -1 ? null : status;
    });
  });
  await enqueuePartsRejections(f.h.ctx, [{ systemId: user.system_id, partIds: [...answers.keys()], text: 'x', registeredDelivery: 1, sourceAddr: 'Acme', sourceTon: 5, destinationAddr: '+447700900001' }]);
  await waitFor(() => got.length === 5);
  // The back-off and the answer timeout run on Pigeon's clock.
  await waitFor(async () => (await listSmppUsers(f.h.ctx)).find((u) => u.system_id === user.system_id)!.waiting === 4, { message: 'the refused one removed' });
  f.h.clock.advance(1000);
  await waitFor(() => got.length === 9, { message: () => `the four retried, got ${got.length}` });
  await waitFor(async () => (await waiting(user.system_id)) === 0);
  const counts = new Map<string, number>();
  for (const r of got) counts.set(String(r.pdu.receipted_message_id), (counts.get(String(r.pdu.receipted_message_id)) ?? 0) + 1);
  assert.deepEqual(Object.fromEntries(counts), { throttled: 2, 'queue-full': 2, syserr: 2, silent: 2, refused: 1 });
  rx.close();
  await closed(rx);
});

test('deliveries out on a link that closes before answering go to the next bind at once, not after the answer timeout', async () => {
  const user = await f.user();
  let first: Received[] = [];
  const rx = await bound(f.port, user, 'bind_receiver', undefined, (s) => (first = recording(s, () => null)));
  const ids = ['lost-1', 'lost-2', 'lost-3'];
  await enqueuePartsRejections(f.h.ctx, [{ systemId: user.system_id, partIds: ids, text: 'x', registeredDelivery: 1, sourceAddr: 'Acme', sourceTon: 5, destinationAddr: '+447700900001' }]);
  await waitFor(() => first.length === 3);
  rx.destroy();
  await closed(rx);
  // Pigeon's clock stands still: nothing waits out a hold.
  let second: Received[] = [];
  const again = await bound(f.port, user, 'bind_receiver', undefined, (s) => (second = recording(s)));
  await waitFor(() => second.length === 3, { message: () => `the three again, got ${second.length}` });
  assert.deepEqual(second.map((r) => String(r.pdu.receipted_message_id)).sort(), ids);
  await waitFor(async () => (await waiting(user.system_id)) === 0);
  again.close();
  await closed(again);
});

test('inbound messages to the account\'s numbers reach its receiver binds as deliver_sm, long ones in UDH parts', async () => {
  const user = await f.user();
  const accountId = (await listSmppUsers(f.h.ctx)).find((u) => u.system_id === user.system_id)!.account_id;
  await assignNumber(f.h.ctx, accountId, '+447700900777');
  let got: Received[] = [];
  const rx = await bound(f.port, user, 'bind_receiver', undefined, (s) => (got = recording(s)));
  const long = 'word '.repeat(50).trim();
  await receiveInbound(f.h.ctx, { from: '+447911123456', to: '+447700900777', message: long });
  await receiveInbound(f.h.ctx, { from: '+447911123456', to: '+447700900777', message: 'Привет 😀' });
  await waitFor(() => got.length === 3, { message: () => `three deliver_sm, got ${got.length}` });
  const [p1, p2, ucs] = got.map((r) => r.pdu);
  for (const pdu of [p1!, p2!, ucs!]) {
    assert.deepEqual([pdu.source_addr, pdu.source_addr_ton, pdu.destination_addr, pdu.dest_addr_ton], ['447911123456', 1, '447700900777', 1]);
  }
  assert.deepEqual([p1!.esm_class, p1!.data_coding, p2!.esm_class], [0x40, 0, 0x40]);
  const udh = (pdu: PDU) => (pdu.short_message as { udh: Buffer[] }).udh[0]!;
  assert.deepEqual([udh(p1!)[0], udh(p1!)[3], udh(p1!)[4], udh(p2!)[4], udh(p1!)[2] === udh(p2!)[2]], [0x00, 2, 1, 2, true]);
  assert.equal(got[0]!.text + got[1]!.text, long);
  assert.deepEqual([ucs!.esm_class, ucs!.data_coding, got[2]!.text], [0, 8, 'Привет 😀']);
  await waitFor(async () => (await waiting(user.system_id)) === 0);
  rx.close();
  await closed(rx);
});

/** A receiving bind as the outbox pump sees it, answered by the test. */
function fakeBind(systemId: string) {
  const out: { fields: DeliverFields; done: (status: DeliverAnswer) => void }[] = [];
  let inFlight = 0;
  const session = {
    receives: true,
    user: { system_id: systemId },
    get deliveriesInFlight() {
      return inFlight;
    },
    deliver(fields: DeliverFields, done: (status: DeliverAnswer) => void) {
      inFlight++;
      out.push({
        fields,
        done: (status) => {
          inFlight--;
          done(status);
        },
      });
    },
  };
  return { session: session as unknown as Session & ReceivingBind, out };
}

test('the next window is taken ahead: an answer\'s slot gets the next delivery at once, with no wait on the database; what is ahead when the bind goes is due again at once, in order', async () => {
  const user = await f.user();
  const bind = fakeBind(user.system_id);
  let binds = [bind.session];
  const pump = new OutboxPump(f.h.ctx, { boundSessions: () => binds }, { responseTimeoutMs: 30_000 });
  const ids = Array.from({ length: 35 }, (_, i) => `ahead${String(i).padStart(2, '0')}`);
  await enqueuePartsRejections(f.h.ctx, [{ systemId: user.system_id, partIds: ids, text: 'x', registeredDelivery: 1, sourceAddr: 'Acme', sourceTon: 5, destinationAddr: '+447700900001' }]);
  const idOf = (d: { fields: DeliverFields }) => Buffer.from(d.fields.tlvs[0]![1], 'hex').toString('latin1').replace(/\0$/, '');
  await pump.pumpAll();
  assert.equal(bind.out.length, 10, 'a window out on the bind');
  // Answered in one go, in this turn: the next window goes out before anything else runs.
  for (const d of bind.out.slice(0, 10)) d.done(0);
  assert.equal(bind.out.length, 20, 'the window taken ahead went out as the answers came');
  assert.deepEqual(bind.out.map(idOf), ids.slice(0, 20));

  // The bind goes with 10 out and the next 10 taken ahead (or being taken): all due again at once.
  binds = [];
  for (const d of bind.out.slice(10)) d.done('gone');
  const held = async () =>
    Number((await f.h.ctx.store.db.selectFrom('smpp_outbox').select((eb) => eb.fn.countAll<number>().as('n')).where('system_id', '=', user.system_id).where('next_at', '>', f.h.clock.now()).executeTakeFirstOrThrow()).n);
  await waitFor(async () => (await held()) === 0, { message: 'nothing held once the bind went' });
  const next = fakeBind(user.system_id);
  binds = [next.session];
  await pump.pumpAll();
  for (let answered = 0; next.out.length < 25; ) {
    await waitFor(() => next.out.length > answered, { message: () => `more on the next bind, got ${next.out.length}` });
    const batch = next.out.slice(answered);
    for (const d of batch) d.done(0);
    answered += batch.length;
  }
  assert.deepEqual(next.out.map(idOf), ids.slice(10), 'in their order, none twice, with the clock standing still');
  await waitFor(async () => (await waiting(user.system_id)) === 0);
});
