/**
 * The SMPP 3.4 wire format as the listener needs it: framing that tells a malformed or oversized
 * PDU from bytes that are not SMPP at all, bounded readers that refuse a field running past the end
 * of its PDU, and the few PDUs the server writes. The `smpp` package's own parser reads past ends
 * and caps PDUs at 16 KiB, so the server does not lean on it; the tests use its client.
 */
import type { DeliverFields } from '../services/smpp-access/smpp-outbox.ts';

export const CMD = {
  generic_nack: 0x80000000,
  bind_receiver: 0x00000001,
  bind_transmitter: 0x00000002,
  query_sm: 0x00000003,
  submit_sm: 0x00000004,
  deliver_sm: 0x00000005,
  unbind: 0x00000006,
  replace_sm: 0x00000007,
  cancel_sm: 0x00000008,
  bind_transceiver: 0x00000009,
  outbind: 0x0000000b,
  enquire_link: 0x00000015,
  submit_multi: 0x00000021,
  alert_notification: 0x00000102,
  data_sm: 0x00000103,
} as const;

export const RESP = 0x80000000;

export const STATUS = {
  ROK: 0x00,
  RINVMSGLEN: 0x01,
  RINVCMDLEN: 0x02,
  RINVCMDID: 0x03,
  RINVBNDSTS: 0x04,
  RALYBND: 0x05,
  RSYSERR: 0x08,
  RINVSRCADR: 0x0a,
  RINVDSTADR: 0x0b,
  RBINDFAIL: 0x0d,
  RINVPASWD: 0x0e,
  RMSGQFUL: 0x14,
  RSUBMITFAIL: 0x45,
  RTHROTTLED: 0x58,
  RINVSCHED: 0x61,
  RINVEXPIRY: 0x62,
  RX_T_APPN: 0x64,
  /** Pigeon's own (the range SMPP 3.4 leaves to SMSC vendors): permanent refusals. */
  INSUFFICIENT_CREDITS: 0x400,
  OPTED_OUT: 0x401,
  DAILY_LIMIT: 0x402,
} as const;

export const TLV = {
  sc_interface_version: 0x0210,
  receipted_message_id: 0x001e,
  sar_msg_ref_num: 0x020c,
  sar_total_segments: 0x020e,
  sar_segment_seqnum: 0x020f,
  message_payload: 0x0424,
  message_state: 0x0427,
} as const;

export const HEADER_LENGTH = 16;
/** DECISIONS.md §10: a PDU over 64 KiB is malformed. */
export const MAX_PDU_LENGTH = 64 * 1024;

export interface Pdu {
  id: number;
  status: number;
  seq: number;
  body: Buffer;
}

export type Framed =
  | { kind: 'pdu'; pdu: Pdu }
  /** A length under 16 or over 64 KiB: answered with generic_nack, then the connection closes. */
  | { kind: 'malformed'; seq: number }
  /** Bytes no SMPP peer sends (an HTTP request, a TLS hello): the connection closes, nothing more. */
  | { kind: 'not-smpp' };

/**
 * Cuts a byte stream into PDUs. A length whose first octet is not zero (16 MiB or more) is text or
 * TLS: "GET " reads as 1.2 GB, a TLS record header as 369 MB. Smaller impossible lengths are an
 * SMPP peer's mistake. The framer stops at the first problem; the caller closes.
 */
export class PduFramer {
  #pending: Buffer = Buffer.alloc(0);
  #done = false;

  push(chunk: Buffer): Framed[] {
    if (this.#done) return [];
    this.#pending = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    const out: Framed[] = [];
    while (this.#pending.length >= 4) {
      const length = this.#pending.readUInt32BE(0);
      if (this.#pending[0] !== 0) {
        this.#done = true;
        out.push({ kind: 'not-smpp' });
        break;
      }
      if (length < HEADER_LENGTH || length > MAX_PDU_LENGTH) {
        this.#done = true;
        out.push({ kind: 'malformed', seq: this.#pending.length >= 16 ? this.#pending.readUInt32BE(12) : 0 });
        break;
      }
      if (this.#pending.length < length) break;
      const raw = this.#pending.subarray(0, length);
      out.push({ kind: 'pdu', pdu: { id: raw.readUInt32BE(4), status: raw.readUInt32BE(8), seq: raw.readUInt32BE(12), body: Buffer.from(raw.subarray(HEADER_LENGTH)) } });
      this.#pending = this.#pending.subarray(length);
    }
    if (this.#pending.length === 0) this.#pending = Buffer.alloc(0);
    return out;
  }

  /** Bytes of a PDU not yet complete. */
  get buffered(): number {
    return this.#pending.length;
  }
}

export class MalformedPdu extends Error {}

/** Reads a PDU body's fields in order, refusing any that runs past its end. */
export class BodyReader {
  #offset = 0;
  constructor(private readonly body: Buffer) {}

  cstring(max: number, name: string): string {
    const end = this.body.indexOf(0, this.#offset);
    if (end === -1) throw new MalformedPdu(`${name} runs past the end of the PDU`);
    if (end - this.#offset > max - 1) throw new MalformedPdu(`${name} is longer than ${max - 1} octets`);
    const value = this.body.toString('latin1', this.#offset, end);
    this.#offset = end + 1;
    return value;
  }

  u8(name: string): number {
    if (this.#offset >= this.body.length) throw new MalformedPdu(`${name} runs past the end of the PDU`);
    return this.body[this.#offset++]!;
  }

  bytes(n: number, name: string): Buffer {
    if (this.#offset + n > this.body.length) throw new MalformedPdu(`${name} runs past the end of the PDU`);
    const value = this.body.subarray(this.#offset, this.#offset + n);
    this.#offset += n;
    return value;
  }

  /** The optional parameters that close the body, by tag (a repeated tag keeps its first value). */
  tlvs(): Map<number, Buffer> {
    const out = new Map<number, Buffer>();
    while (this.#offset < this.body.length) {
      if (this.#offset + 4 > this.body.length) throw new MalformedPdu('an optional parameter header runs past the end of the PDU');
      const tag = this.body.readUInt16BE(this.#offset);
      const length = this.body.readUInt16BE(this.#offset + 2);
      this.#offset += 4;
      const value = this.bytes(length, `optional parameter 0x${tag.toString(16).padStart(4, '0')}`);
      if (!out.has(tag)) out.set(tag, value);
    }
    return out;
  }
}

export interface BindBody {
  systemId: string;
  password: string;
  systemType: string;
  interfaceVersion: number;
}

export function readBind(body: Buffer): BindBody {
  const r = new BodyReader(body);
  const systemId = r.cstring(16, 'system_id');
  const password = r.cstring(9, 'password');
  const systemType = r.cstring(13, 'system_type');
  const interfaceVersion = r.u8('interface_version');
  r.u8('addr_ton');
  r.u8('addr_npi');
  r.cstring(41, 'address_range');
  return { systemId, password, systemType, interfaceVersion };
}

export interface SubmitSm {
  serviceType: string;
  sourceTon: number;
  sourceNpi: number;
  source: string;
  destTon: number;
  destNpi: number;
  destination: string;
  esmClass: number;
  protocolId: number;
  priority: number;
  scheduleDeliveryTime: string;
  validityPeriod: string;
  registeredDelivery: number;
  dataCoding: number;
  shortMessage: Buffer;
  tlvs: Map<number, Buffer>;
}

export function readSubmitSm(body: Buffer): SubmitSm {
  const r = new BodyReader(body);
  const serviceType = r.cstring(6, 'service_type');
  const sourceTon = r.u8('source_addr_ton');
  const sourceNpi = r.u8('source_addr_npi');
  const source = r.cstring(21, 'source_addr');
  const destTon = r.u8('dest_addr_ton');
  const destNpi = r.u8('dest_addr_npi');
  const destination = r.cstring(21, 'destination_addr');
  const esmClass = r.u8('esm_class');
  const protocolId = r.u8('protocol_id');
  const priority = r.u8('priority_flag');
  const scheduleDeliveryTime = r.cstring(17, 'schedule_delivery_time');
  const validityPeriod = r.cstring(17, 'validity_period');
  const registeredDelivery = r.u8('registered_delivery');
  r.u8('replace_if_present_flag');
  const dataCoding = r.u8('data_coding');
  r.u8('sm_default_msg_id');
  const smLength = r.u8('sm_length');
  const shortMessage = Buffer.from(r.bytes(smLength, 'short_message'));
  const tlvs = r.tlvs();
  return { serviceType, sourceTon, sourceNpi, source, destTon, destNpi, destination, esmClass, protocolId, priority, scheduleDeliveryTime, validityPeriod, registeredDelivery, dataCoding, shortMessage, tlvs };
}

export function cstring(value: string): Buffer {
  return Buffer.concat([Buffer.from(value, 'latin1'), Buffer.from([0])]);
}

export function tlv(tag: number, value: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head.writeUInt16BE(tag, 0);
  head.writeUInt16BE(value.length, 2);
  return Buffer.concat([head, value]);
}

export function encodePdu(id: number, status: number, seq: number, body: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(HEADER_LENGTH);
  head.writeUInt32BE(HEADER_LENGTH + body.length, 0);
  head.writeUInt32BE(id >>> 0, 4);
  head.writeUInt32BE(status >>> 0, 8);
  head.writeUInt32BE(seq >>> 0, 12);
  return Buffer.concat([head, body]);
}

export function deliverSmBody(f: DeliverFields): Buffer {
  const sm = Buffer.from(f.short_message, 'hex');
  return Buffer.concat([
    cstring(''),
    Buffer.from([f.source_addr_ton, f.source_addr_npi]),
    cstring(f.source_addr),
    Buffer.from([f.dest_addr_ton, f.dest_addr_npi]),
    cstring(f.destination_addr),
    Buffer.from([f.esm_class, 0, 0]),
    cstring(''),
    cstring(''),
    Buffer.from([0, 0, f.data_coding, 0, sm.length]),
    sm,
    ...f.tlvs.map(([tag, hex]) => tlv(tag, Buffer.from(hex, 'hex'))),
  ]);
}
