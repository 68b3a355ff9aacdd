/**
 * submit_sm over Pigeon's SMPP listener (DECISIONS.md §10) with the `smpp` package's client: the
 * codings, message_payload, UDH and SAR parts put back together, scheduling, and every refusal of
 * the one acceptance mapped to its command_status. The message is then read as the API reads it.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { CompiledQuery } from 'kysely';
import type { Session } from 'smpp';
import { encodeGsm7, encodeUcs2 } from '../../src/carriers/smpp/gsm7.ts';
import { ledgerMatchesBalance } from '../../src/services/accounts/accounts.ts';
import { setAccountLimits } from '../../src/services/accounts/account-limits.ts';
import { addOptOut } from '../../src/services/opt-outs/opt-outs.ts';
import { importCard, setAccountRateCard } from '../../src/services/pricing/rate-cards.ts';
import { messageDetail } from '../../src/services/messages/reports.ts';
import { listSmppUsers } from '../../src/services/smpp-access/smpp-users.ts';
import { SmppServer } from '../../src/smpp-server/smpp-server.ts';
import { smppMessagesAmong } from '../../src/store/repositories/smpp-outbox.repository.ts';
import { setAccountStatus } from '../../src/store/repositories/accounts.repository.ts';
import { bound, call, closed, serverFixture, waitFor, type ServerFixture } from './server-fixture.ts';

let f: ServerFixture;
before(async () => {
  f = await serverFixture();
});
after(async () => {
  await f.close();
});

interface Bound {
  session: Session;
  accountId: string;
  submit(fields: Record<string, unknown>): Promise<{ status: number; id: string }>;
}

async function customer(opts: Parameters<ServerFixture['user']>[0] = {}): Promise<Bound> {
  const user = await f.user(opts);
  const accountId = (await listSmppUsers(f.h.ctx)).find((u) => u.system_id === user.system_id)!.account_id;
  const session = await bound(f.port, user);
  return {
    session,
    accountId,
    async submit(fields) {
      const answer = await call(session, 'submit_sm', {
        source_addr_ton: 5,
        source_addr: 'Acme',
        dest_addr_ton: 1,
        dest_addr_npi: 1,
        destination_addr: '447700900001',
        data_coding: 0,
        ...fields,
      });
      return { status: answer.command_status, id: String(answer.message_id ?? '') };
    },
  };
}

async function stored(c: Bound, id: string) {
  return (await messageDetail(f.h.ctx, c.accountId, id)).message;
}

async function balance(c: Bound): Promise<number> {
  return (await ledgerMatchesBalance(f.h.ctx, c.accountId)).balance;
}

const cleanup: Session[] = [];
after(async () => {
  for (const s of cleanup) s.close();
  await Promise.all(cleanup.map(closed));
});

test('each data_coding (0, 1, 3, 8) is read into the text, stored and charged like an API send', async () => {
  const c = await customer();
  cleanup.push(c.session);
  const cases: [number, Buffer, string, string][] = [
    [0, encodeGsm7('Hello €[x] @home'), 'Hello €[x] @home', 'GSM-7'],
    [1, Buffer.from('Plain ASCII', 'latin1'), 'Plain ASCII', 'GSM-7'],
    [3, Buffer.from('Ça coûte', 'latin1'), 'Ça coûte', 'UCS-2'],
    [8, encodeUcs2('Привет 😀'), 'Привет 😀', 'UCS-2'],
  ];
  for (const [dataCoding, bytes, text, encoding] of cases) {
    const answer = await c.submit({ data_coding: dataCoding, short_message: bytes });
    assert.equal(answer.status, 0, `data_coding ${dataCoding}`);
    const message = await stored(c, answer.id);
    assert.deepEqual([message.body, message.encoding, message.sender, message.recipient, message.segments], [text, encoding, 'Acme', '+447700900001', 1]);
  }
  assert.equal(await balance(c), 96);
});

test('message_payload carries a long message in one PDU: one message, charged by its segments', async () => {
  const c = await customer();
  cleanup.push(c.session);
  const text = 'x'.repeat(300);
  const answer = await c.submit({ message_payload: encodeGsm7(text) });
  assert.equal(answer.status, 0);
  const message = await stored(c, answer.id);
  assert.deepEqual([message.body, message.segments], [text, 2]);
  assert.equal(await balance(c), 98);
});

test('UDH parts (8- and 16-bit references) and SAR parts, in any order, become one message; each part gets its own id, the first part\'s is the message\'s', async () => {
  const c = await customer();
  cleanup.push(c.session);
  const gsm = ['a'.repeat(153), 'b'.repeat(153), 'c'.repeat(10)];
  const udh8 = (seq: number) => Buffer.from([5, 0, 3, 0x42, 3, seq]);
  const order = [2, 3, 1];
  const ids: Record<number, string> = {};
  for (const seq of order) {
    const answer = await c.submit({ esm_class: 0x40, short_message: Buffer.concat([udh8(seq), encodeGsm7(gsm[seq - 1]!)]) });
    assert.equal(answer.status, 0);
    ids[seq] = answer.id;
  }
  const message = await stored(c, ids[1]!);
  assert.deepEqual([message.body, message.segments], [gsm.join(''), 3]);
  assert.deepEqual([ids[2], ids[3]], [`${ids[1]}.2`, `${ids[1]}.3`]);

  // UCS-2 with a 16-bit reference, the emoji's surrogate pair split between the parts.
  const ucs = encodeUcs2('Привет 😀 мир');
  const cut = 14; // inside the pair
  const udh16 = (seq: number) => Buffer.from([6, 8, 4, 0x12, 0x34, 2, seq]);
  const first = await c.submit({ esm_class: 0x40, data_coding: 8, short_message: Buffer.concat([udh16(1), ucs.subarray(0, cut)]) });
  const second = await c.submit({ esm_class: 0x40, data_coding: 8, short_message: Buffer.concat([udh16(2), ucs.subarray(cut)]) });
  assert.deepEqual([first.status, second.status], [0, 0]);
  assert.equal((await stored(c, first.id)).body, 'Привет 😀 мир');

  const sar = (seq: number) => ({ sar_msg_ref_num: 7, sar_total_segments: 2, sar_segment_seqnum: seq });
  const s2 = await c.submit({ short_message: encodeGsm7('world'), ...sar(2) });
  const s1 = await c.submit({ short_message: encodeGsm7('hello '), ...sar(1) });
  assert.deepEqual([s1.status, s2.status], [0, 0]);
  assert.equal((await stored(c, s1.id)).body, 'hello world');
  assert.equal(await balance(c), 100 - 3 - 1 - 1);
});

test('schedule_delivery_time and validity_period, absolute and relative, become send_at and validity_period', async () => {
  const c = await customer();
  cleanup.push(c.session);
  const now = f.h.clock.now();
  const absolute = await c.submit({ short_message: encodeGsm7('later'), schedule_delivery_time: '260301130000000+', validity_period: '260301140000000+' });
  assert.equal(absolute.status, 0);
  let message = await stored(c, absolute.id);
  assert.deepEqual([message.status, Number(message.send_at), Number(message.validity_period)], ['scheduled', Date.parse('2026-03-01T13:00:00Z'), 3600]);
  const relative = await c.submit({ short_message: encodeGsm7('soon'), schedule_delivery_time: '000000001000000R', validity_period: '000000020000000R' });
  assert.equal(relative.status, 0);
  message = await stored(c, relative.id);
  assert.deepEqual([message.status, Number(message.send_at), Number(message.validity_period)], ['scheduled', now + 600_000, 7200]);
  const offset = await c.submit({ short_message: encodeGsm7('zone'), schedule_delivery_time: '260301150000008+' });
  assert.equal(Number((await stored(c, offset.id)).send_at), Date.parse('2026-03-01T13:00:00Z'));
});

test('each refusal answers its command_status, with nothing stored or charged', async () => {
  const c = await customer();
  cleanup.push(c.session);
  await addOptOut(f.h.ctx, c.accountId, '+447700900009', 'operator');
  const cases: [string, Record<string, unknown>, number][] = [
    ['a Sender ID not approved', { source_addr: 'Other' }, 0x0a],
    ['a number not assigned', { source_addr_ton: 1, source_addr: '447700900555' }, 0x0a],
    ['a national destination', { dest_addr_ton: 0, destination_addr: '07700900001' }, 0x0b],
    ['a destination that is no number', { destination_addr: '4' }, 0x0b],
    ['empty text', { short_message: Buffer.alloc(0) }, 0x01],
    ['over 1,600 characters', { short_message: Buffer.alloc(0), message_payload: encodeGsm7('y'.repeat(1601)) }, 0x01],
    ['both short_message and message_payload', { message_payload: encodeGsm7('y') }, 0x45],
    ['data_coding 4', { data_coding: 4, short_message: Buffer.from('hi') }, 0x45],
    ['esm_class of a receipt', { esm_class: 0x04, short_message: encodeGsm7('hi') }, 0x45],
    ['schedule in the past', { short_message: encodeGsm7('hi'), schedule_delivery_time: '250301130000000+' }, 0x61],
    ['schedule that is no time', { short_message: encodeGsm7('hi'), schedule_delivery_time: '2603011300' }, 0x61],
    ['validity too short', { short_message: encodeGsm7('hi'), validity_period: '000000000010000R' }, 0x62],
    ['validity already past', { short_message: encodeGsm7('hi'), validity_period: '250301130000000+' }, 0x62],
    ['an opted-out recipient', { destination_addr: '447700900009', short_message: encodeGsm7('hi') }, 0x401],
  ];
  for (const [name, fields, status] of cases) {
    f.h.clock.advance(200);
    assert.equal((await c.submit({ short_message: encodeGsm7('hi'), ...fields })).status, status, name);
  }
  assert.equal(await balance(c), 100);

  await setAccountLimits(f.h.ctx, c.accountId, { countries: '33' });
  f.h.clock.advance(200);
  assert.equal((await c.submit({ short_message: encodeGsm7('hi') })).status, 0x0b, 'a country not allowed');
  await setAccountLimits(f.h.ctx, c.accountId, { countries: null, dailyMessages: 0 });
  f.h.clock.advance(200);
  assert.equal((await c.submit({ short_message: encodeGsm7('hi') })).status, 0x402, 'daily limit');

  const poor = await customer({ credits: 1 });
  cleanup.push(poor.session);
  assert.equal((await poor.submit({ message_payload: encodeGsm7('z'.repeat(200)) })).status, 0x400, 'insufficient credits');
  assert.equal(await balance(poor), 1);
});

test('rate cards: a blocked or unpriced destination is 0x0B with nothing charged; a priced one is charged its price', async () => {
  await importCard(f.h.ctx, 'smpp-card', 'prefix,credits_per_segment\n+44,2\n+4477009000,blocked\n');
  const c = await customer();
  cleanup.push(c.session);
  await setAccountRateCard(f.h.ctx, c.accountId, 'smpp-card');
  f.h.clock.advance(200);
  assert.equal((await c.submit({ short_message: encodeGsm7('hi') })).status, 0x0b, 'blocked');
  f.h.clock.advance(200);
  assert.equal((await c.submit({ destination_addr: '33612345678', short_message: encodeGsm7('hi') })).status, 0x0b, 'not priced');
  assert.equal(await balance(c), 100);
  f.h.clock.advance(200);
  const sent = await c.submit({ destination_addr: '447911123456', message_payload: encodeGsm7('z'.repeat(200)) });
  assert.equal(sent.status, 0);
  assert.equal((await stored(c, sent.id)).credits, 4);
  assert.equal(await balance(c), 96);
});

test('the user\'s tps is a bucket with a burst of at least 10: the 11th PDU at once is 0x58, then it refills', async () => {
  const c = await customer({ tps: 1 });
  cleanup.push(c.session);
  const answers = await Promise.all(Array.from({ length: 11 }, (_, i) => c.submit({ short_message: encodeGsm7(`n${i}`) })));
  assert.deepEqual(answers.map((a) => a.status).sort((a, b) => a - b), [...Array(10).fill(0), 0x58]);
  f.h.clock.advance(1000);
  assert.equal((await c.submit({ short_message: encodeGsm7('again') })).status, 0);
});

test('the account\'s RATE_LIMIT_MAX counts its submits with its HTTP requests: past it, 0x58 until the window ends', async () => {
  const c = await customer();
  cleanup.push(c.session);
  const { max, windowMs } = f.h.ctx.config.rateLimit;
  f.h.clock.advance(windowMs - (f.h.clock.now() % windowMs));
  // The account's requests so far in this window (the HTTP API counts into the same store), all but one.
  for (let i = 0; i < max - 1; i++) await f.server.rateLimits.hit(c.accountId, windowMs, f.h.clock.now());
  assert.equal((await c.submit({ short_message: encodeGsm7('the last one') })).status, 0);
  assert.equal((await c.submit({ short_message: encodeGsm7('one too many') })).status, 0x58);
  f.h.clock.advance(windowMs);
  assert.equal((await c.submit({ short_message: encodeGsm7('a new window') })).status, 0);
});

test('a refusal at the last part, or parts that never complete, leave nothing sent or charged, and the earlier parts get REJECTD receipts', async () => {
  const c = await customer();
  cleanup.push(c.session);
  await addOptOut(f.h.ctx, c.accountId, '+447700900009', 'operator');
  const receipts: string[] = [];
  c.session.on('deliver_sm', (pdu) => {
    receipts.push(`${pdu.receipted_message_id}:${pdu.message_state}:${(pdu.short_message as { message: string }).message}`);
    c.session.send(pdu.response());
  });
  const udh = (ref: number, seq: number) => Buffer.from([5, 0, 3, ref, 2, seq]);
  const p1 = await c.submit({ destination_addr: '447700900009', registered_delivery: 1, esm_class: 0x40, short_message: Buffer.concat([udh(1, 1), encodeGsm7('part one ')]) });
  const p2 = await c.submit({ destination_addr: '447700900009', registered_delivery: 1, esm_class: 0x40, short_message: Buffer.concat([udh(1, 2), encodeGsm7('part two')]) });
  assert.deepEqual([p1.status, p2.status], [0, 0x401]);
  const lone = await c.submit({ registered_delivery: 2, esm_class: 0x40, short_message: Buffer.concat([udh(2, 1), encodeGsm7('alone')]) });
  assert.equal(lone.status, 0);
  await waitFor(() => receipts.length >= 2, { timeout: 5000, message: () => `two receipts, got ${JSON.stringify(receipts)}` });
  assert.equal(receipts.length, 2);
  const byId = new Map(receipts.map((r) => [r.split(':')[0], r]));
  for (const id of [p1.id, lone.id]) {
    const r = byId.get(id);
    assert.ok(r, `a receipt for ${id}: ${JSON.stringify(receipts)}`);
    assert.match(r, new RegExp(`^${id}:8:id:${id.replace('.', '\\.')} sub:001 dlvrd:000 submit date:\\d{10} done date:\\d{10} stat:REJECTD err:000 text:`));
  }
  await assert.rejects(stored(c, p1.id));
  await assert.rejects(stored(c, lone.id));
  assert.equal(await balance(c), 100);
});

test('the parts of a long message are stored as they come: they may reach two listeners (processes); a part sent again is answered with its id and sends nothing twice; a part after its group was given up is refused', async () => {
  const user = await f.user();
  const accountId = (await listSmppUsers(f.h.ctx)).find((u) => u.system_id === user.system_id)!.account_id;
  // A second listener on the same store: another process, as behind a load balancer.
  const other = new SmppServer(f.h.ctx, { ...f.server.options, port: 0 });
  const otherPort = await other.listen();
  const first = await bound(f.port, user);
  const second = await bound(otherPort, user);
  cleanup.push(first, second);
  const receipts: string[] = [];
  for (const session of [first, second]) {
    session.on('deliver_sm', (pdu) => {
      receipts.push(`${pdu.receipted_message_id}:${pdu.message_state}`);
      session.send(pdu.response());
    });
  }
  const submit = async (session: Session, ref: number, seq: number, text: string) => {
    const answer = await call(session, 'submit_sm', {
      source_addr_ton: 5,
      source_addr: 'Acme',
      dest_addr_ton: 1,
      dest_addr_npi: 1,
      destination_addr: '447700900002',
      registered_delivery: 1,
      esm_class: 0x40,
      short_message: Buffer.concat([Buffer.from([5, 0, 3, ref, 2, seq]), encodeGsm7(text)]),
    });
    return { status: answer.command_status, id: String(answer.message_id ?? '') };
  };
  const p1 = await submit(second, 7, 1, 'across two ');
  const p2 = await submit(first, 7, 2, 'listeners');
  await other.close();
  assert.deepEqual([p1.status, p2.status, p2.id], [0, 0, `${p1.id}.2`]);
  const message = (await messageDetail(f.h.ctx, accountId, p1.id)).message;
  assert.deepEqual([message.body, message.segments], ['across two listeners', 1]);
  // The last part sent again (its answer lost): the same id, nothing stored or charged twice.
  const again = await submit(first, 7, 2, 'listeners');
  assert.deepEqual([again.status, again.id], [0, p2.id]);
  const stats = await f.h.ctx.store.db.selectFrom('messages').select('id').where('account_id', '=', accountId).execute();
  assert.equal(stats.length, 1);
  assert.equal((await ledgerMatchesBalance(f.h.ctx, accountId)).balance, 99);
  // A group given up (its second part late past the timeout): REJECTD for the first, 0x45 for the late one.
  const lone = await submit(first, 8, 1, 'first ');
  await waitFor(() => receipts.includes(`${lone.id}:8`), { timeout: 5000, message: () => JSON.stringify(receipts) });
  const late = await submit(first, 8, 2, 'too late');
  assert.equal(late.status, 0x45);
  assert.equal((await ledgerMatchesBalance(f.h.ctx, accountId)).balance, 99);
});

test('/metrics counts the binds by type and the submits by command_status, and what waits for receiver binds', async () => {
  const c = await customer();
  cleanup.push(c.session);
  f.h.clock.advance(1000);
  assert.equal((await c.submit({ short_message: encodeGsm7('counted') })).status, 0);
  assert.equal((await c.submit({ source_addr: 'Nobody', short_message: encodeGsm7('refused') })).status, 0x0a);
  const metrics = (await f.h.request('GET', '/metrics')).body;
  const value = (series: string) => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\d+)$`, 'm').exec(metrics)?.[1] ?? NaN);
  assert.ok(value('pigeon_smpp_binds{bind_type="transceiver"}') >= 1, metrics);
  assert.ok(value('pigeon_smpp_submits_total{status="0x00000000"}') >= 1);
  assert.ok(value('pigeon_smpp_submits_total{status="0x0000000a"}') >= 1);
  assert.ok(value('pigeon_smpp_deliveries_waiting') >= 0);
});

test('submits of one turn are stored together, each with its receipt details, beside HTTP sends and keyed sends of the same moment', async () => {
  const user = await f.user({ credits: 100, tps: 1000 });
  const accountId = (await listSmppUsers(f.h.ctx)).find((u) => u.system_id === user.system_id)!.account_id;
  const session = await bound(f.port, user);
  cleanup.push(session);
  const send = (i: number, headers: Record<string, string> = {}) =>
    f.h.request('POST', '/v1/sms/send', { key: user.key, body: { to: `+4477009${String(10000 + i)}`, from: 'Acme', message: `HTTP ${i}` }, headers });
  // Written in one go, so that they reach the listener in one read, with HTTP sends (plain and
  // with an Idempotency-Key) accepted in the same turns.
  const [answers, plain, keyed] = await Promise.all([
    Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        call(session, 'submit_sm', { source_addr_ton: 5, source_addr: 'Acme', dest_addr_ton: 1, dest_addr_npi: 1, destination_addr: `4477009${String(20000 + i)}`, registered_delivery: 1, short_message: `SMPP ${i}` }),
      ),
    ),
    Promise.all(Array.from({ length: 5 }, (_, i) => send(i))),
    Promise.all(Array.from({ length: 5 }, (_, i) => send(100 + i, { 'idempotency-key': `turn-${i}` }))),
  ]);
  assert.deepEqual(answers.map((a) => a.command_status), Array(20).fill(0));
  assert.deepEqual([...plain, ...keyed].map((r) => r.statusCode), Array(10).fill(200));
  const smppIds = answers.map((a) => String(a.message_id));
  const details = await smppMessagesAmong(f.h.ctx.store.db, [...smppIds, ...[...plain, ...keyed].map((r) => r.json().message_id as string)]);
  assert.deepEqual(details.map((d) => d.message_id).sort(), [...smppIds].sort(), 'every SMPP message, and only those, has its receipt details');
  assert.ok(details.every((d) => d.system_id === user.system_id && d.registered_delivery === 1 && d.part_ids === d.message_id));
  assert.deepEqual(await ledgerMatchesBalance(f.h.ctx, accountId), { balance: 100 - 30, ledger: 100 - 30 });
});

test('a submit decides its access from the cache with no read of its own, and at commit: a Sender ID withdrawn or an account suspended elsewhere refuses the very next submit', async () => {
  // Binds are not watched here, so the suspension must be caught by the submit itself.
  const g = await serverFixture({}, { watchMs: 60_000 });
  const made = await g.user();
  const session = await bound(g.port, made);
  const user = (await listSmppUsers(g.h.ctx)).find((u) => u.system_id === made.system_id)!;
  const accountId = user.account_id;
  const submit = async (text: string) =>
    (await call(session, 'submit_sm', { source_addr_ton: 5, source_addr: 'Acme', dest_addr_ton: 1, dest_addr_npi: 1, destination_addr: '447700900001', short_message: encodeGsm7(text) })).command_status;
  const store = g.h.ctx.store;
  try {
    assert.equal(await submit('first'), 0);
    let reads = 0;
    const count = (text: string) => {
      if (/access_revision/.test(text)) reads++;
    };
    const { readRow } = store;
    const { executeQuery } = store.read;
    if (readRow) store.readRow = (text, parameters) => (count(text), readRow(text, parameters));
    store.read.executeQuery = ((query: CompiledQuery) => (count(query.sql), executeQuery.call(store.read, query))) as typeof executeQuery;
    try {
      for (let i = 0; i < 3; i++) assert.equal(await submit(`again ${i}`), 0);
    } finally {
      if (readRow) store.readRow = readRow;
      store.read.executeQuery = executeQuery;
    }
    assert.equal(reads, 0, 'the access revision is read only by the commit');

    // Changed as another process would: the revision moves in the database, nothing tells this one.
    await store.db.updateTable('sender_ids').set({ status: 'rejected' }).where('account_id', '=', accountId).execute();
    assert.equal(await submit('withdrawn'), 0x0a);
    await store.db.updateTable('sender_ids').set({ status: 'approved' }).where('account_id', '=', accountId).execute();
    assert.equal(await submit('approved again'), 0);
    await setAccountStatus(store.db, accountId, 'suspended');
    assert.equal(await submit('suspended'), 0x45);
    await setAccountStatus(store.db, accountId, 'active');
    assert.equal(await submit('active again'), 0);
    assert.deepEqual(await ledgerMatchesBalance(g.h.ctx, accountId), { balance: 100 - 6, ledger: 100 - 6 });
  } finally {
    session.close();
    await closed(session);
    await g.close();
  }
});
