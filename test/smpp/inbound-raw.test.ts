/**
 * A multi-part inbound message written by hand, byte for byte, by a raw-socket SMSC on 127.0.0.1:
 * the connector is not tested only against the `smpp` library that it is built on. The three parts
 * of a UCS-2 message (16-bit reference UDH) arrive out of order; each deliver_sm_resp echoes its
 * sequence number with status 0, and the message is stored whole.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { assignNumber } from '../../src/services/numbers/numbers.ts';
import { smppPigeon, type SmppPigeon } from './pigeon-smpp.ts';

const BIND_TRANSCEIVER = 0x00000009;
const DELIVER_SM = 0x00000005;
const ENQUIRE_LINK = 0x00000015;
const UNBIND = 0x00000006;
const RESP = 0x80000000;
/** The response id of a command, unsigned (JavaScript's `|` gives a signed 32-bit number). */
const resp = (command: number) => (command | RESP) >>> 0;

function pdu(commandId: number, sequence: number, body: Buffer, status = 0): Buffer {
  const header = Buffer.alloc(16);
  header.writeUInt32BE(16 + body.length, 0);
  header.writeUInt32BE(commandId, 4);
  header.writeUInt32BE(status, 8);
  header.writeUInt32BE(sequence, 12);
  return Buffer.concat([header, body]);
}

const cstr = (s: string) => Buffer.concat([Buffer.from(s, 'latin1'), Buffer.from([0])]);

/** deliver_sm: a mobile-originated UCS-2 part with a 16-bit concatenation IE. */
function deliverSm(sequence: number, ref: number, total: number, seq: number, text: string): Buffer {
  const udh = Buffer.from([0x06, 0x08, 0x04, ref >> 8, ref & 0xff, total, seq]);
  const message = Buffer.concat([udh, Buffer.from(text, 'utf16le').swap16()]);
  const body = Buffer.concat([
    cstr(''), // service_type
    Buffer.from([1, 1]), cstr('447911123456'), // source TON, NPI, address
    Buffer.from([1, 1]), cstr('447700900950'), // destination TON, NPI, address
    Buffer.from([0x40, 0, 0]), // esm_class (UDHI), protocol_id, priority_flag
    cstr(''), cstr(''), // schedule_delivery_time, validity_period
    Buffer.from([0, 0, 0x08, 0]), // registered_delivery, replace_if_present, data_coding (UCS-2), sm_default_msg_id
    Buffer.from([message.length]),
    message,
  ]);
  return pdu(DELIVER_SM, sequence, body);
}

describe('SMPP: a multi-part deliver_sm written by hand', () => {
  let server: Server;
  let p: SmppPigeon;
  let key: string;
  let socket: Socket | null = null;
  const responses: { command: number; status: number; sequence: number }[] = [];
  let bound!: () => void;
  const boundOnce = new Promise<void>((resolve) => (bound = resolve));

  before(async () => {
    server = createServer((s) => {
      socket = s;
      let buffered = Buffer.alloc(0);
      s.on('data', (chunk: Buffer) => {
        buffered = Buffer.concat([buffered, chunk]);
        while (buffered.length >= 16 && buffered.length >= buffered.readUInt32BE(0)) {
          const length = buffered.readUInt32BE(0);
          const command = buffered.readUInt32BE(4);
          const status = buffered.readUInt32BE(8);
          const sequence = buffered.readUInt32BE(12);
          buffered = buffered.subarray(length);
          if (command === BIND_TRANSCEIVER) {
            s.write(pdu(resp(BIND_TRANSCEIVER), sequence, cstr('raw-smsc')));
            bound();
          } else if (command === UNBIND) {
            s.end(pdu(resp(UNBIND), sequence, Buffer.alloc(0)));
          } else if (command === ENQUIRE_LINK) {
            s.write(pdu(resp(ENQUIRE_LINK), sequence, Buffer.alloc(0)));
          } else if (command >= RESP) {
            responses.push({ command, status, sequence });
          }
        }
      });
    });
    server.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const port = (server.address() as AddressInfo).port;
    p = await smppPigeon({ SMPP_HOST: '127.0.0.1', SMPP_PORT: String(port) });
    await boundOnce;
    const c = await p.h.customer();
    key = c.key;
    await assignNumber(p.h.ctx, c.accountId, '+447700900950');
  });
  after(async () => {
    await p.close();
    socket?.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  test('parts 2, 3, 1: three answers with status 0, one message', async () => {
    const parts: [number, string][] = [[2, 'второй, '], [3, 'третий 🎉'], [1, 'Первый, ']];
    for (const [i, [seq, text]] of parts.entries()) socket!.write(deliverSm(100 + i, 0x1234, 3, seq, text));
    await p.settle(() => responses.length === 3, 'three deliver_sm_resp');
    assert.deepEqual(
      responses.map((r) => [r.command, r.status, r.sequence]).sort((a, b) => a[2]! - b[2]!),
      [[resp(DELIVER_SM), 0, 100], [resp(DELIVER_SM), 0, 101], [resp(DELIVER_SM), 0, 102]],
    );
    const [m] = (await p.h.request('GET', '/v1/sms/inbound', { key })).json().data;
    assert.equal(m.message, 'Первый, второй, третий 🎉');
    assert.equal(m.from, '+447911123456');
    assert.equal(m.segments, 3);
    assert.equal(m.encoding, 'UCS-2');
  });
});
