/**
 * Inbound messages over SMPP (DECISIONS.md §8): a deliver_sm that is not a receipt becomes an
 * inbound message of the account holding the number, in every coding, multi-part ones reassembled
 * in any order (UDH or SAR) or stored incomplete after 60 s; deliver_sm_resp comes only once the
 * message is stored, and a failure to store is answered with a temporary error so the SMSC resends.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type CompiledQuery } from 'kysely';
import { assignNumber } from '../../src/services/numbers/numbers.ts';
import { DONE_PARTS_KEPT_MS } from '../../src/services/inbound/inbound.ts';
import { TestSmsc } from './smsc.ts';
import { smppPigeon, type SmppPigeon } from './pigeon-smpp.ts';

const OK = 0;
const ESME_RX_T_APPN = 0x64;

describe('SMPP: inbound messages', () => {
  let smsc: TestSmsc;
  let p: SmppPigeon;
  let key: string;
  let accountId: string;
  before(async () => {
    smsc = new TestSmsc({ systemId: 'pigeon', password: 'secret' }, 'hex');
    const port = await smsc.listen();
    p = await smppPigeon({ SMPP_HOST: '127.0.0.1', SMPP_PORT: String(port), SMPP_WINDOW: '10' });
    const c = await p.h.customer({ credits: 10 });
    key = c.key;
    accountId = c.accountId;
    await assignNumber(p.h.ctx, accountId, '+447700900900');
    await assignNumber(p.h.ctx, accountId, '60600');
    await p.h.request('PUT', '/v1/account/events-url', { key, body: { url: 'https://127.0.0.1:9/events' } });
  });
  after(async () => {
    await p.close();
    await smsc.stop();
  });

  const inbox = async () => (await p.h.request('GET', '/v1/sms/inbound', { key })).json().data as Record<string, unknown>[];
  const base = { source_addr_ton: 1, source_addr_npi: 1, source_addr: '447911123456', dest_addr_ton: 1, dest_addr_npi: 1, destination_addr: '447700900900', esm_class: 0 };
  const udh = (ref: number, total: number, seq: number) => Buffer.from([0x05, 0x00, 0x03, ref, total, seq]);

  test('a GSM-7 message: stored before deliver_sm_resp, from in E.164, sms.received queued with inbound_id', async () => {
    let storedAtResponse: number | null = null;
    const status = await smsc.deliver({ ...base, data_coding: 0, short_message: 'Hello {world} €5' }).then(async (s) => {
      storedAtResponse = (await inbox()).length;
      return s;
    });
    assert.equal(status, OK);
    assert.equal(storedAtResponse, 1, 'the message was stored when the SMSC got its answer');
    const [m] = await inbox();
    assert.equal(m!.from, '+447911123456');
    assert.equal(m!.to, '+447700900900');
    assert.equal(m!.message, 'Hello {world} €5');
    assert.equal(m!.encoding, 'GSM-7');
    assert.equal(m!.segments, 1);
    const [event] = (await p.h.request('GET', '/v1/webhooks/events', { key })).json().data;
    assert.equal(event.event, 'sms.received');
    assert.equal(event.inbound_id, m!.id);
    assert.deepEqual(event.payload.data, m);
  });

  test('UCS-2, Latin-1 and 8-bit codings; a national sender gets the country of the number; a short code', async () => {
    assert.equal(await smsc.deliver({ ...base, data_coding: 8, short_message: Buffer.from('\ufeff'.slice(1) + 'Привет 👋', 'utf16le').swap16() }), OK);
    assert.equal(await smsc.deliver({ ...base, source_addr_ton: 2, source_addr: '07911123457', data_coding: 3, short_message: Buffer.from('café crème', 'latin1') }), OK);
    assert.equal(await smsc.deliver({ ...base, data_coding: 4, short_message: Buffer.from('naïve bytes', 'utf8') }), OK);
    assert.equal(await smsc.deliver({ ...base, dest_addr_ton: 3, dest_addr_npi: 0, destination_addr: '60600', data_coding: 0, short_message: 'to the short code' }), OK);
    const got = (await inbox()).slice(0, 4).reverse();
    assert.deepEqual(
      got.map((m) => [m.message, m.encoding, m.from, m.to]),
      [
        ['Привет 👋', 'UCS-2', '+447911123456', '+447700900900'],
        ['café crème', 'Latin-1', '+447911123457', '+447700900900'],
        ['naïve bytes', '8-bit', '+447911123456', '+447700900900'],
        ['to the short code', 'GSM-7', '+447911123456', '60600'],
      ],
    );
  });

  test('UDH multi-part reassembled out of order, a repeated part counted once', async () => {
    const part = (seq: number, text: string) => ({ ...base, esm_class: 0x40, data_coding: 0, short_message: Buffer.concat([udh(7, 3, seq), Buffer.from(text, 'latin1')]) });
    const before = (await inbox()).length;
    assert.equal(await smsc.deliver(part(3, 'three.')), OK);
    assert.equal(await smsc.deliver(part(1, 'One, ')), OK);
    assert.equal(await smsc.deliver(part(1, 'One, ')), OK);
    assert.equal((await inbox()).length, before, 'nothing stored until the last part');
    assert.equal(await smsc.deliver(part(2, 'two, ')), OK);
    const [m] = await inbox();
    assert.equal(m!.message, 'One, two, three.');
    assert.equal(m!.segments, 3);
    assert.equal(m!.incomplete, undefined);
  });

  test('SAR multi-part (TLVs) in UCS-2', async () => {
    const part = (seq: number, text: string) => ({
      ...base,
      data_coding: 8,
      short_message: Buffer.from(text, 'utf16le').swap16(),
      sar_msg_ref_num: 300,
      sar_total_segments: 2,
      sar_segment_seqnum: seq,
    });
    assert.equal(await smsc.deliver(part(2, 'мир')), OK);
    assert.equal(await smsc.deliver(part(1, 'Привет, ')), OK);
    const [m] = await inbox();
    assert.equal(m!.message, 'Привет, мир');
    assert.equal(m!.encoding, 'UCS-2');
  });

  test('parts still missing after 60 s: stored with what came, incomplete', async () => {
    const part = (seq: number, text: string) => ({ ...base, esm_class: 0x40, data_coding: 0, short_message: Buffer.concat([udh(9, 3, seq), Buffer.from(text, 'latin1')]) });
    const before = (await inbox()).length;
    assert.equal(await smsc.deliver(part(1, 'first ')), OK);
    assert.equal(await smsc.deliver(part(3, 'third')), OK);
    p.h.clock.advance(59_000);
    await p.workers.drain();
    assert.equal((await inbox()).length, before);
    p.h.clock.advance(1_001);
    await p.workers.drain();
    const [m] = await inbox();
    assert.equal(m!.message, 'first third');
    assert.equal(m!.incomplete, true);
    assert.equal(m!.segments, 2);
  });

  test('a part of a stored message sent again (its answer was lost) is answered and stores nothing, even after 60 s', async () => {
    const part = (seq: number, text: string) => ({ ...base, esm_class: 0x40, data_coding: 0, short_message: Buffer.concat([udh(11, 2, seq), Buffer.from(text, 'latin1')]) });
    const before = (await inbox()).length;
    assert.equal(await smsc.deliver(part(1, 'Hello ')), OK);
    assert.equal(await smsc.deliver(part(2, 'again')), OK);
    assert.equal((await inbox()).length, before + 1);
    // What an SMSC does after a rebind when Pigeon died between storing the message and answering.
    assert.equal(await smsc.deliver(part(2, 'again')), OK);
    p.h.clock.advance(61_000);
    await p.workers.drain();
    assert.equal((await inbox()).length, before + 1, 'the repeated part was stored as a fragment');

    // The handset's reference comes round again, with another text: a new message.
    assert.equal(await smsc.deliver(part(2, 'world')), OK);
    assert.equal(await smsc.deliver(part(1, 'Hello, ')), OK);
    const all = await inbox();
    assert.equal(all.length, before + 2);
    assert.equal(all[0]!.message, 'Hello, world');
    assert.equal(all[0]!.incomplete, undefined);

    // Stored messages' parts are forgotten after a while.
    p.h.clock.advance(DONE_PARTS_KEPT_MS + 1);
    await p.workers.drain();
    assert.equal(Number((await sql<{ n: number }>`select count(*) as n from inbound_parts`.execute(p.h.ctx.store.db)).rows[0]!.n), 0);
  });

  test('to a number nobody holds: kept as unrouted', async () => {
    assert.equal(await smsc.deliver({ ...base, destination_addr: '447700900999', data_coding: 0, short_message: 'lost?' }), OK);
    const rows = await p.h.ctx.store.db.selectFrom('inbound_messages').selectAll().where('account_id', 'is', null).execute();
    assert.deepEqual(rows.map((r) => [r.recipient, r.body]), [['+447700900999', 'lost?']]);
  });

  test('STOP whose commit is followed by a failed read: answered 0 once, stored once, opted out', { timeout: 10_000 }, async () => {
    const store = p.h.ctx.store;
    const fail = (text: string) => {
      if (/access_revision/.test(text)) throw new Error('read failed after the commit');
    };
    const { readRow } = store;
    const { executeQuery } = store.read;
    // Only the reads after the commit: the bump inside it is a trigger, and a send's check runs in its transaction.
    if (readRow) store.readRow = (text, parameters) => (fail(text), readRow(text, parameters));
    store.read.executeQuery = ((query: CompiledQuery) => (fail(query.sql), executeQuery.call(store.read, query))) as typeof executeQuery;
    let status: number;
    try {
      status = await smsc.deliver({ ...base, source_addr: '447911123499', data_coding: 0, short_message: 'STOP' });
    } finally {
      if (readRow) store.readRow = readRow;
      store.read.executeQuery = executeQuery;
    }
    assert.equal(status, OK);
    const stop = (await inbox()).filter((m) => m.from === '+447911123499');
    assert.deepEqual(stop.map((m) => m.message), ['STOP']);
    const optOuts = (await p.h.request('GET', '/v1/opt-outs', { key })).json().data as { phone: string }[];
    assert.ok(optOuts.some((o) => o.phone === '+447911123499'));
  });

  test('a message that cannot be stored gets a temporary error; the SMSC’s resend is stored', async () => {
    const before = (await inbox()).length;
    await sql`alter table inbound_messages rename to inbound_messages_away`.execute(p.h.ctx.store.db);
    let status: number;
    try {
      status = await smsc.deliver({ ...base, data_coding: 0, short_message: 'second chance' });
    } finally {
      await sql`alter table inbound_messages_away rename to inbound_messages`.execute(p.h.ctx.store.db);
    }
    assert.equal(status, ESME_RX_T_APPN);
    assert.equal(await smsc.deliver({ ...base, data_coding: 0, short_message: 'second chance' }), OK);
    const all = await inbox();
    assert.equal(all.length, before + 1);
    assert.equal(all[0]!.message, 'second chance');
  });
});
