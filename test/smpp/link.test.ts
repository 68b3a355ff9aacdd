import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeGsm7 } from '../../src/carriers/smpp/gsm7.ts';
import { buildApp } from '../../src/http/app.ts';
import { TestSmsc } from './smsc.ts';
import { smppPigeon, type SmppPigeon } from './pigeon-smpp.ts';
import { waitFor } from '../helpers/wait-for.ts';

describe('SMPP: throttling, dropped links, binds', () => {
  let smsc: TestSmsc;
  let p: SmppPigeon;
  let key: string;
  before(async () => {
    smsc = new TestSmsc({ systemId: 'pigeon', password: 'secret' });
    const port = await smsc.listen();
    // A link silent for three intervals is dropped: 250 ms keeps a loaded machine's pauses from passing for a dead link.
    p = await smppPigeon({ SMPP_HOST: '127.0.0.1', SMPP_PORT: String(port), SMPP_WINDOW: '5', SMPP_SYSTEM_TYPE: 'VMA', SMPP_ENQUIRE_LINK_MS: '250' });
    key = (await p.h.customer({ credits: 10_000 })).key;
  });
  after(async () => {
    await p.close();
    await smsc.stop();
  });
  afterEach(() => {
    smsc.submits.length = 0;
  });

  const statuses = async (ids: string[]) => (await p.h.ctx.store.db.selectFrom('messages').select(['id', 'status']).where('id', 'in', ids).execute()).map((m) => m.status);
  const allSent = (ids: string[]) => async () => (await statuses(ids)).every((s) => s === 'sent');
  /** Each acknowledged submit, keyed by destination + UDH sequence: must be unique. */
  const acknowledgedKeys = () => smsc.acknowledged.map((s) => `${s.destination}/${s.udh ? s.udh[4] : 1}`);

  test('binds as transceiver with system_type and keeps the bind alive with enquire_link', async () => {
    assert.equal(smsc.binds, 1);
    assert.equal(smsc.systemType, 'VMA');
    await p.settle(() => smsc.enquireLinks >= 2, 'enquire_link');
    assert.equal(smsc.binds, 1, 'still the same bind');
  });

  test('ESME_RTHROTTLED and ESME_RMSGQFUL back off and retry; every message arrives exactly once and none fails', async () => {
    smsc.answerNext(2, 0x58);
    smsc.answerNext(2, 0x14);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push(await p.send(key, `+4479111000${String(i).padStart(2, '0')}`, `throttled ${i}`));
    await p.settle(allSent(ids), 'all sent');
    assert.equal(smsc.submits.filter((s) => s.messageId === null).length, 4, 'four submits were refused for throttling');
    const keys = acknowledgedKeys();
    assert.equal(keys.length, 12);
    assert.equal(new Set(keys).size, 12, 'no duplicates');
    const failed = await p.h.ctx.store.db.selectFrom('messages').select('id').where('id', 'in', ids).where('status', '=', 'failed').execute();
    assert.equal(failed.length, 0);
  });

  test('validity_period reaches the SMSC as relative time on every part; none without one', async () => {
    const res = await p.h.request('POST', '/v1/sms/send', { key, body: { to: '+447911100099', from: 'Acme', message: 'v'.repeat(200), validity_period: 3600 } });
    assert.equal(res.statusCode, 200);
    const plain = await p.send(key, '+447911100098', 'no validity');
    await p.settle(allSent([res.json().message_id, plain]), 'both sent');
    const withPeriod = smsc.acknowledged.filter((s) => s.destination === '447911100099');
    assert.equal(withPeriod.length, 2);
    // Sent relative (the test clock stands still, so exactly one hour is left at dispatch); the
    // SMSC's library reads it as its own now plus that hour.
    for (const s of withPeriod) {
      const ahead = Date.parse(s.validityPeriod ?? '') - Date.now();
      assert.ok(ahead > 3_590_000 && ahead <= 3_600_000, `${s.validityPeriod}: one hour from now`);
    }
    assert.deepEqual(smsc.acknowledged.filter((s) => s.destination === '447911100098').map((s) => s.validityPeriod), [null]);
  });

  test('no more than SMPP_WINDOW submits wait for an answer at once', async () => {
    smsc.holdResponses = true;
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push(await p.send(key, `+4479115000${String(i).padStart(2, '0')}`, `window ${i}`));
    const draining = p.workers.drain();
    // Wait without draining again: a second drain beside this one would claim and submit on its own.
    // Five sent and unanswered, the SMSC has them, and the link holds the next one back.
    const link = p.carrier.links[0]!;
    await waitFor(() => smsc.submits.length === 5 && link.awaitingResponse === 5 && link.queued > 0, {
      timeout: 20_000,
      message: () => `five submits in the window and more queued (SMSC has ${smsc.submits.length}, ${link.awaitingResponse} unanswered, ${link.queued} queued)`,
    });
    assert.equal(smsc.submits.length, 5, 'the sixth waits for an answer');
    smsc.release();
    await draining;
    await p.settle(allSent(ids), 'all sent');
    assert.equal(smsc.acknowledged.length, 8);
  });

  test('a link dropped mid-window loses nothing and duplicates nothing the SMSC acknowledged', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push(await p.send(key, `+4479112000${String(i).padStart(2, '0')}`, `drop ${i}`));
    smsc.dropAfter(3);
    const bindsBefore = smsc.binds;
    await p.workers.drain();
    const afterDrop = await statuses(ids);
    assert.equal(afterDrop.filter((s) => s === 'sent').length, 3, 'the three acknowledged are sent');
    assert.equal(afterDrop.filter((s) => s === 'pending').length, 5, 'the rest wait as pending');
    await p.settle(() => smsc.binds > bindsBefore && p.carrier.status().ready, 'rebound');
    p.h.clock.advance(5000);
    await p.settle(allSent(ids), 'all sent after the rebind');
    const keys = acknowledgedKeys();
    assert.equal(keys.length, 8);
    assert.equal(new Set(keys).size, keys.length, 'nothing acknowledged was sent twice');

    // The drop falls between the parts of one message: only the unacknowledged parts go again.
    const long = await p.send(key, '+447911200098', 'w'.repeat(400));
    smsc.dropAfter(1);
    const binds = smsc.binds;
    await p.workers.drain();
    assert.equal((await p.message(long)).status, 'pending');
    await p.settle(() => smsc.binds > binds && p.carrier.status().ready, 'rebound');
    p.h.clock.advance(5000);
    await p.settle(allSent([long]), 'the long one sent');
    const longParts = smsc.acknowledged.filter((s) => s.destination === '447911200098');
    assert.deepEqual(longParts.map((s) => s.udh![4]), [1, 2, 3], 'each part acknowledged once, in order');
    assert.equal(new Set(longParts.map((s) => s.udh![2])).size, 1, 'the retry keeps the reference');
    const stored = await p.h.ctx.store.db.selectFrom('carrier_parts').select('carrier_id').where('message_id', '=', long).orderBy('part_index').execute();
    assert.deepEqual(stored.map((r) => r.carrier_id), longParts.map((s) => s.messageId));
  });

  test('while the SMSC is down: not ready, a clear status, messages wait as pending and go when it is back', async () => {
    const port = smsc.port;
    await smsc.stop();
    await p.settle(() => !p.carrier.status().ready, 'unbound');
    assert.match(p.carrier.status().detail, /route default unbound/);
    const app = await buildApp({ ctx: p.h.ctx, carrier: p.carrier });
    try {
      const ready = await app.inject({ method: 'GET', url: '/ready' });
      assert.equal(ready.statusCode, 503);
      assert.match(ready.json().checks.carrier, /unbound/);
      const id = await p.send(key, '+447911300001', 'waiting');
      await p.workers.drain();
      assert.equal((await p.message(id)).status, 'pending');
      smsc.refuseBinds = true;
      await smsc.listen(port);
      await p.settle(() => smsc.bindFailures > 0 && /bind refused/.test(p.carrier.status().detail), 'a refused bind');
      assert.equal(p.carrier.status().ready, false);
      p.h.clock.advance(5000);
      await p.workers.drain();
      assert.equal((await p.message(id)).status, 'pending', 'still pending while the bind is refused');
      smsc.refuseBinds = false;
      await p.settle(() => p.carrier.status().ready, 'bound again');
      assert.equal((await app.inject({ method: 'GET', url: '/ready' })).statusCode, 200);
      p.h.clock.advance(5000);
      await p.settle(async () => (await p.message(id)).status === 'sent', 'sent after the rebind');
      assert.equal(smsc.acknowledged.filter((s) => s.destination === '447911300001').length, 1);
    } finally {
      await app.close();
    }
  });
});

describe('SMPP: encoding, concatenation, multi-part receipts, routes, expiry', () => {
  let uk: TestSmsc;
  let world: TestSmsc;
  let p: SmppPigeon;
  let key: string;
  before(async () => {
    uk = new TestSmsc({ systemId: 'uk-user', password: 'uk-pass' });
    world = new TestSmsc({ systemId: 'pigeon', password: 'secret' }, 'decimal');
    const ukPort = await uk.listen();
    const worldPort = await world.listen();
    p = await smppPigeon({
      SMPP_HOST: '127.0.0.1',
      SMPP_PORT: String(worldPort),
      SMPP_ROUTES: JSON.stringify([{ name: 'uk', prefixes: ['+44'], host: '127.0.0.1', port: ukPort, system_id: 'uk-user', password: 'uk-pass', tps: 1000, window: 2 }]),
    });
    key = (await p.h.customer({ credits: 10_000 })).key;
  });
  after(async () => {
    await p.close();
    await uk.stop();
    await world.stop();
  });

  test('routing by the longest prefix, each route with its own credentials; the default takes the rest', async () => {
    const a = await p.send(key, '+447911400001', 'to the uk');
    const b = await p.send(key, '+33612345678', 'to france');
    await p.settle(async () => (await p.message(a)).status === 'sent' && (await p.message(b)).status === 'sent', 'sent');
    assert.deepEqual(uk.acknowledged.map((s) => s.destination), ['447911400001']);
    assert.deepEqual(world.acknowledged.map((s) => s.destination), ['33612345678']);
    await world.sendReceipt(world.acknowledged[0]!.messageId!, { stat: 'DELIVRD', format: 'tlv' });
    await p.settle(async () => (await p.message(b)).status === 'delivered', 'delivered');
  });

  test('UCS-2 as data_coding 8; a 3-part GSM message with UDH and esm_class 0x40 over one bind', async () => {
    const ucs = await p.send(key, '+33600000001', 'Привет, мир');
    const long = 'The quick brown fox jumps over the lazy dog {€}. '.repeat(8);
    const gsm = await p.send(key, '+33600000002', long);
    await p.settle(async () => (await p.message(ucs)).status === 'sent' && (await p.message(gsm)).status === 'sent', 'sent');
    const u = world.acknowledged.find((s) => s.destination === '33600000001')!;
    assert.equal(u.dataCoding, 8);
    assert.equal(u.text, 'Привет, мир');
    assert.equal(u.udh, null);
    const parts = world.acknowledged.filter((s) => s.destination === '33600000002');
    assert.equal(parts.length, (await p.message(gsm)).segments);
    assert.equal(parts.length, 3);
    for (const [i, s] of parts.entries()) {
      assert.equal(s.dataCoding, 0);
      assert.equal(s.esmClass & 0x40, 0x40);
      assert.deepEqual([...s.udh!].filter((_, j) => j !== 2), [0, 3, 3, i + 1]);
    }
    assert.equal(new Set(parts.map((s) => s.udh![2])).size, 1);
    assert.equal(new Set(parts.map((s) => s.bind)).size, 1, 'all parts over the same bind');
    assert.equal(parts.map((s) => s.text).join(''), long);
    assert.equal(decodeGsm7(Buffer.from([0x1b, 0x65])), '€');
  });

  test('multi-part: the first final receipt of any part decides', async () => {
    const id = await p.send(key, '+33600000003', 'z'.repeat(300));
    await p.settle(async () => (await p.message(id)).status === 'sent', 'sent');
    const parts = world.acknowledged.filter((s) => s.destination === '33600000003');
    assert.equal(parts.length, 2);
    const stored = await p.h.ctx.store.db.selectFrom('carrier_parts').select(['carrier_id', 'part_index']).where('message_id', '=', id).orderBy('part_index').execute();
    assert.deepEqual(stored.map((r) => r.carrier_id), parts.map((s) => s.messageId));
    await world.sendReceipt(parts[1]!.messageId!, { stat: 'UNDELIV', spelling: 'padded-hex' });
    p.h.clock.advance(1);
    await world.sendReceipt(parts[0]!.messageId!, { stat: 'DELIVRD' });
    await p.settle(async () => (await p.message(id)).status !== 'sent', 'final');
    await p.workers.drain();
    const m = await p.message(id);
    assert.equal(m.status, 'failed');
    assert.equal(m.error_code, 'undeliverable');
  });

  test('sent without a receipt beyond the validity period (48 h): failed with expired, event written', async () => {
    const id = await p.send(key, '+33600000004', 'no receipt');
    await p.settle(async () => (await p.message(id)).status === 'sent', 'sent');
    p.h.clock.advance(48 * 3_600_000 - 1);
    await p.workers.drain();
    assert.equal((await p.message(id)).status, 'sent');
    p.h.clock.advance(2);
    await p.workers.drain();
    const m = await p.message(id);
    assert.equal(m.status, 'failed');
    assert.equal(m.error_code, 'expired');
    const events = await p.h.ctx.store.db.selectFrom('webhook_events').select('event').where('message_id', '=', id).orderBy('created_at').execute();
    assert.deepEqual(events.map((e) => e.event), ['sms.sent', 'sms.failed']);
  });
});
