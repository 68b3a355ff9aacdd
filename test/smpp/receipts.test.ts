import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Socket } from 'node:net';
import { recordDeliveryReport } from '../../src/services/messages/record-delivery-reports.ts';
import { TestSmsc, type IdSpelling } from './smsc.ts';
import { smppPigeon, type SmppPigeon } from './pigeon-smpp.ts';

describe('SMPP: submit and receipts', () => {
  let smsc: TestSmsc;
  let p: SmppPigeon;
  let key: string;
  before(async () => {
    smsc = new TestSmsc({ systemId: 'pigeon', password: 'secret' }, 'hex');
    const port = await smsc.listen();
    p = await smppPigeon({ SMPP_HOST: '127.0.0.1', SMPP_PORT: String(port), SMPP_WINDOW: '10' });
    key = (await p.h.customer({ credits: 1000 })).key;
  });
  after(async () => {
    await p.close();
    await smsc.stop();
  });

  const events = async (id: string) =>
    (await p.h.ctx.store.db.selectFrom('webhook_events').select(['event', 'payload']).where('message_id', '=', id).orderBy('created_at').orderBy('id').execute()).map((e) => e.event);

  /** Sends one message and waits until the SMSC acknowledged it and Pigeon recorded `sent`. */
  async function sent(to: string, text = 'hello') {
    const before = smsc.acknowledged.length;
    const id = await p.send(key, to, text);
    await p.settle(async () => (await p.message(id)).status === 'sent', 'sent');
    const submits = smsc.acknowledged.slice(before);
    return { id, submits, smscId: submits[0]!.messageId! };
  }

  test('happy path: submit_sm with registered_delivery, the SMSC id stored, sent, then delivered by receipt', async () => {
    const { id, submits, smscId } = await sent('+447911123456', 'hello');
    assert.equal(submits.length, 1);
    assert.equal(submits[0]!.registeredDelivery, 1);
    assert.equal(submits[0]!.destination, '447911123456');
    assert.equal(submits[0]!.source, 'Acme');
    assert.equal(submits[0]!.dataCoding, 0);
    assert.equal(submits[0]!.text, 'hello');
    assert.equal((await p.message(id)).carrier_message_id, smscId);
    assert.deepEqual(await events(id), ['sms.sent']);

    assert.equal(await smsc.sendReceipt(smscId, { stat: 'DELIVRD' }), 0, 'deliver_sm_resp OK');
    await p.settle(async () => (await p.message(id)).status === 'delivered', 'delivered');
    assert.deepEqual(await events(id), ['sms.sent', 'sms.delivered']);
    const report = (await p.h.request('GET', `/v1/sms/delivery-reports?message_id=${id}`, { key })).json().data[0];
    assert.equal(report.status, 'delivered');
  });

  const failures: [string, string][] = [
    ['UNDELIV', 'undeliverable'],
    ['REJECTD', 'rejected'],
    ['EXPIRED', 'expired'],
    ['DELETED', 'deleted'],
    ['UNKNOWN', 'unknown'],
  ];
  for (const format of ['text', 'tlv', 'both'] as const) {
    test(`every final state maps (${format} receipts); ACCEPTD and ENROUTE change nothing`, async () => {
      for (const [stat, code] of failures) {
        const { id, smscId } = await sent('+447911123457');
        assert.equal(await smsc.sendReceipt(smscId, { stat: 'ACCEPTD', format }), 0);
        assert.equal(await smsc.sendReceipt(smscId, { stat: 'ENROUTE', format }), 0);
        await p.workers.drain();
        assert.equal((await p.message(id)).status, 'sent', `${stat}: intermediate states change nothing`);
        assert.equal(await smsc.sendReceipt(smscId, { stat, err: '034', format, withSeconds: format === 'both' }), 0);
        await p.settle(async () => (await p.message(id)).status === 'failed', stat);
        const m = await p.message(id);
        assert.equal(m.error_code, code, stat);
        assert.match(m.error_message ?? '', /carrier/);
        assert.deepEqual(await events(id), ['sms.sent', 'sms.failed']);
      }
      const { id, smscId } = await sent('+447911123458');
      await smsc.sendReceipt(smscId, { stat: 'DELIVRD', format });
      await p.settle(async () => (await p.message(id)).status === 'delivered', 'delivered');
    });
  }

  test('a late or duplicate receipt does not move a message back', async () => {
    const { id, smscId } = await sent('+447911123459');
    await smsc.sendReceipt(smscId, { stat: 'DELIVRD' });
    await p.settle(async () => (await p.message(id)).status === 'delivered', 'delivered');
    await smsc.sendReceipt(smscId, { stat: 'UNDELIV' });
    await smsc.sendReceipt(smscId, { stat: 'DELIVRD' });
    await p.workers.drain();
    assert.equal((await p.message(id)).status, 'delivered');
    assert.deepEqual(await events(id), ['sms.sent', 'sms.delivered']);
  });

  for (const [style, spelling] of [
    ['hex', 'decimal'],
    ['hex', 'padded-decimal'],
    ['hex', 'lower'],
    ['hex', 'padded-hex'],
    ['decimal', 'hex'],
    ['decimal', 'padded-hex'],
    ['decimal', 'padded-decimal'],
  ] as const) {
    test(`ids answered in ${style} match receipts spelled ${spelling}`, async () => {
      smsc.idStyle = style;
      try {
        const { id, smscId } = await sent('+447911123460');
        await smsc.sendReceipt(smscId, { stat: 'DELIVRD', spelling: spelling as IdSpelling, format: spelling.length % 2 ? 'tlv' : 'text' });
        await p.settle(async () => (await p.message(id)).status === 'delivered', 'delivered');
      } finally {
        smsc.idStyle = 'hex';
      }
    });
  }

  test('on SQLite a receipt for a sent message is applied before its deliver_sm is answered, with no receipt job; an unknown one is kept as a job', async () => {
    const { id, smscId } = await sent('+447911123464');
    const receiptJobs = async () => (await p.h.ctx.store.db.selectFrom('jobs').select('ref').where('queue', '=', 'receipt').execute()).map((j) => j.ref);
    assert.equal(await smsc.sendReceipt(smscId, { stat: 'DELIVRD' }), 0);
    if (p.h.ctx.store.dialect === 'sqlite') {
      // Answered means applied: nothing is left for the receipt worker.
      assert.equal((await p.message(id)).status, 'delivered');
      assert.deepEqual(await receiptJobs(), []);
      assert.deepEqual(await events(id), ['sms.sent', 'sms.delivered']);
      assert.equal(await smsc.sendReceipt('7FFFFFF2', { stat: 'DELIVRD' }), 0);
      assert.deepEqual(await receiptJobs(), ['7FFFFFF2'], 'a receipt that cannot be applied yet is stored before it is answered');
    }
    await p.settle(async () => (await p.message(id)).status === 'delivered', 'delivered');
  });

  test('receipts that arrive together are answered together, in one write to the SMSC', async () => {
    const messages = [];
    for (let i = 0; i < 5; i++) messages.push(await sent(`+44791112347${i}`));
    // Every write Pigeon's sockets make to this SMSC from here on, counted where the stream hands
    // them to the system: a corked socket hands all it buffered over in one call.
    const proto = Socket.prototype as unknown as Record<'_write' | '_writev', (this: Socket, ...args: unknown[]) => unknown>;
    const original = { _write: proto._write, _writev: proto._writev };
    let writes = 0;
    for (const name of ['_write', '_writev'] as const) {
      proto[name] = function (this: Socket, ...args: unknown[]) {
        if (this.remotePort === smsc.port) writes++;
        return original[name].apply(this, args);
      };
    }
    try {
      const answers = await Promise.all(messages.map((m) => smsc.sendReceipt(m.smscId, { stat: 'DELIVRD' })));
      assert.deepEqual(answers, [0, 0, 0, 0, 0]);
    } finally {
      Object.assign(proto, original);
    }
    assert.equal(writes, 1, 'the five deliver_sm_resp left in one write');
    for (const m of messages) await p.settle(async () => (await p.message(m.id)).status === 'delivered', 'delivered');
  });

  test('a receipt for an unknown id is answered and the connector carries on', async () => {
    assert.equal(await smsc.sendReceipt('7FFFFFF0', { stat: 'DELIVRD' }), 0);
    assert.equal(await smsc.sendReceipt('7FFFFFF1', { stat: 'GARBAGE', format: 'text' }), 0);
    const { id, smscId } = await sent('+447911123461');
    await smsc.sendReceipt(smscId, { stat: 'DELIVRD' });
    await p.settle(async () => (await p.message(id)).status === 'delivered', 'delivered');
    assert.ok(smsc.receiptAnswers.length > 0 && smsc.receiptAnswers.every((s) => s === 0 || s === 0x64), 'every deliver_sm answered');
  });

  test('a receipt that cannot be stored is answered ESME_RX_T_APPN so the SMSC sends it again', async () => {
    const { id, smscId } = await sent('+447911123463');
    p.carrier.onDeliveryReport(() => Promise.reject(new Error('database unavailable')));
    try {
      assert.equal(await smsc.sendReceipt(smscId, { stat: 'DELIVRD' }), 0x64);
    } finally {
      p.carrier.onDeliveryReport((report) => recordDeliveryReport(p.h.ctx, report));
    }
    await p.workers.drain();
    assert.equal((await p.message(id)).status, 'sent');
    assert.equal(await smsc.sendReceipt(smscId, { stat: 'DELIVRD' }), 0);
    await p.settle(async () => (await p.message(id)).status === 'delivered', 'delivered');
  });

  test('a permanent submit error fails the message with the SMPP status and refunds it', async () => {
    smsc.answerNext(1, 0x0b);
    const id = await p.send(key, '+447911123462', 'refused');
    const before = await p.h.ctx.store.db.selectFrom('credit_ledger').select('kind').where('reference', '=', id).execute();
    await p.settle(async () => (await p.message(id)).status === 'failed', 'failed');
    const m = await p.message(id);
    assert.equal(m.error_code, 'smpp_rinvdstadr');
    assert.match(m.error_message ?? '', /ESME_RINVDSTADR/);
    assert.equal(m.sent_at, null);
    const after = await p.h.ctx.store.db.selectFrom('credit_ledger').select('kind').where('reference', '=', id).execute();
    assert.deepEqual(after.map((r) => r.kind).sort(), [...before.map((r) => r.kind), 'refund'].sort());
    assert.deepEqual(await events(id), ['sms.failed']);
  });
});
