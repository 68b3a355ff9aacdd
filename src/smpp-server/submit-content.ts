/**
 * What a submit_sm asks for, read from its fields (DECISIONS.md §10): the sender as Pigeon names
 * it, the recipient in E.164, the text's bytes and coding, its place in a longer message (UDH or
 * SAR), and when it goes and for how long. Refusals carry the command_status to answer.
 */
import { decodeGsm7, decodeUcs2 } from '../carriers/smpp/gsm7.ts';
import { parseSmppTime } from '../domain/smpp-time.ts';
import { STATUS, TLV, type SubmitSm } from './pdu.ts';

export interface PartPlace {
  ref: number;
  total: number;
  seq: number;
}

export interface SubmitContent {
  from: string;
  to: string;
  dataCoding: number;
  /** The text's octets, without the UDH. */
  payload: Buffer;
  part: PartPlace | null;
  sendAt: number | null;
  /** Absolute end of validity, or null. */
  validUntil: number | null;
  registeredDelivery: number;
}

export type ContentCheck = { ok: true; content: SubmitContent } | { ok: false; status: number; reason: string };

const SUPPORTED_CODINGS = new Set([0, 1, 3, 8]);
/** Messaging-mode bits are free; message type bits must say "default"; bit 6 is UDHI, bit 7 reply path. */
const ESM_TYPE_MASK = 0x3c;
const ESM_UDHI = 0x40;

function refuse(status: number, reason: string): ContentCheck {
  return { ok: false, status, reason };
}

/** TON 5 is a Sender ID; TON 1, or 0 with digits, a number; a short code stays digits. */
function sender(addr: string, ton: number): string {
  if (ton === 5) return addr;
  const digits = addr.replace(/^\+/, '');
  if ((ton === 1 || ton === 0) && /^\d+$/.test(digits)) return digits.length <= 8 && !addr.startsWith('+') && ton === 0 ? digits : `+${digits}`;
  return addr;
}

function recipient(addr: string, ton: number): string | null {
  if (ton === 1) return /^\+?\d+$/.test(addr) ? `+${addr.replace(/^\+/, '')}` : null;
  if (ton === 0 && addr.startsWith('+')) return addr;
  return null;
}

function concatenation(udh: Buffer): PartPlace | null {
  let i = 0;
  while (i + 2 <= udh.length) {
    const iei = udh[i]!;
    const len = udh[i + 1]!;
    const ie = udh.subarray(i + 2, i + 2 + len);
    if (ie.length < len) return null;
    if (iei === 0x00 && len === 3) return { ref: ie[0]!, total: ie[1]!, seq: ie[2]! };
    if (iei === 0x08 && len === 4) return { ref: ie.readUInt16BE(0), total: ie[2]!, seq: ie[3]! };
    i += 2 + len;
  }
  return null;
}

function sar(tlvs: Map<number, Buffer>): PartPlace | null {
  const ref = tlvs.get(TLV.sar_msg_ref_num);
  const total = tlvs.get(TLV.sar_total_segments);
  const seq = tlvs.get(TLV.sar_segment_seqnum);
  if (!ref || !total || !seq || ref.length !== 2 || total.length !== 1 || seq.length !== 1) return null;
  return { ref: ref.readUInt16BE(0), total: total[0]!, seq: seq[0]! };
}

export function readSubmitContent(pdu: SubmitSm, now: number): ContentCheck {
  if (!SUPPORTED_CODINGS.has(pdu.dataCoding)) return refuse(STATUS.RSUBMITFAIL, `data_coding ${pdu.dataCoding} is not supported (0, 1, 3 and 8 are)`);
  if ((pdu.esmClass & ESM_TYPE_MASK) !== 0) return refuse(STATUS.RSUBMITFAIL, `esm_class 0x${pdu.esmClass.toString(16)} is not a plain submit`);
  const to = recipient(pdu.destination, pdu.destTon);
  if (to === null) return refuse(STATUS.RINVDSTADR, 'destination_addr is not an international number (TON 1, or TON 0 with a leading +)');
  if (pdu.source === '') return refuse(STATUS.RINVSRCADR, 'source_addr is empty');
  const payloadTlv = pdu.tlvs.get(TLV.message_payload);
  if (payloadTlv && pdu.shortMessage.length > 0) return refuse(STATUS.RSUBMITFAIL, 'short_message and message_payload are both set');
  let bytes = payloadTlv ?? pdu.shortMessage;
  let part: PartPlace | null = null;
  if (pdu.esmClass & ESM_UDHI) {
    const udhl = bytes[0];
    if (udhl === undefined || 1 + udhl > bytes.length) return refuse(STATUS.RSUBMITFAIL, 'the user data header runs past the message');
    part = concatenation(bytes.subarray(1, 1 + udhl));
    bytes = bytes.subarray(1 + udhl);
  }
  part ??= sar(pdu.tlvs);
  if (part && (part.total < 1 || part.seq < 1 || part.seq > part.total)) return refuse(STATUS.RSUBMITFAIL, `part ${part.seq} of ${part.total} is not a part`);
  if (part && part.total === 1) part = null;
  if (pdu.dataCoding === 8 && bytes.length % 2 !== 0) return refuse(STATUS.RSUBMITFAIL, 'UCS-2 text has an odd number of octets');
  const schedule = parseSmppTime(pdu.scheduleDeliveryTime, now);
  if (!schedule.ok) return refuse(STATUS.RINVSCHED, `schedule_delivery_time: ${schedule.reason}`);
  const validity = parseSmppTime(pdu.validityPeriod, Math.max(now, schedule.at ?? now));
  if (!validity.ok) return refuse(STATUS.RINVEXPIRY, `validity_period: ${validity.reason}`);
  return {
    ok: true,
    content: {
      from: sender(pdu.source, pdu.sourceTon),
      to,
      dataCoding: pdu.dataCoding,
      payload: Buffer.from(bytes),
      part,
      sendAt: schedule.at,
      validUntil: validity.at,
      registeredDelivery: pdu.registeredDelivery,
    },
  };
}

/** The text of octets in `dataCoding`; the parts of a message are joined as octets first, so a pair split between parts is read whole. */
export function decodeText(dataCoding: number, bytes: Buffer): string {
  switch (dataCoding) {
    case 8:
      return decodeUcs2(bytes.length % 2 === 0 ? bytes : bytes.subarray(0, bytes.length - 1));
    case 3:
      return bytes.toString('latin1');
    case 1:
      return Buffer.from(bytes.map((b) => b & 0x7f)).toString('latin1');
    default:
      return decodeGsm7(bytes);
  }
}
