/**
 * A `deliver_sm` that is not a receipt: a message a handset sent to one of our numbers. The `smpp`
 * library has already decoded its text by `data_coding` (GSM 03.38, Latin-1, UCS-2; 8-bit data
 * stays bytes) and split off the user data header; this reads the rest: who sent it to which
 * number, how it was coded, and, for one part of a longer message, its place (UDH concatenation
 * IE, 8- or 16-bit reference, or the SAR TLVs).
 */
import type { PDU } from 'smpp';
import { normaliseSender, TON } from '../../domain/inbound-address.ts';
import type { InboundCarrierMessage } from '../carrier.ts';

function encodingOf(dataCoding: number): string {
  if ((dataCoding & 0xf0) === 0xf0) return dataCoding & 0x04 ? '8-bit' : 'GSM-7';
  switch (dataCoding & 0x0f) {
    case 3:
      return 'Latin-1';
    case 8:
      return 'UCS-2';
    case 2:
    case 4:
      return '8-bit';
    default:
      return 'GSM-7';
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** 8-bit data as text: UTF-8 when it is valid UTF-8, else Latin-1. */
function bytesAsText(bytes: Buffer): string {
  try {
    return utf8.decode(bytes);
  } catch {
    return bytes.toString('latin1');
  }
}

interface Decoded {
  text: string;
  udh: Buffer[];
}

function decoded(value: unknown): Decoded | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return { text: value, udh: [] };
  if (Buffer.isBuffer(value)) return { text: bytesAsText(value), udh: [] };
  if (typeof value === 'object' && 'message' in value) {
    const inner = decoded((value as { message: unknown }).message);
    const udh = (value as { udh?: unknown }).udh;
    return inner && { text: inner.text, udh: Array.isArray(udh) ? udh.filter((u): u is Buffer => Buffer.isBuffer(u)) : [] };
  }
  return null;
}

/** The concatenation information element of a UDH (IEI 0x00 or 0x08), if there is one. */
function concatenation(udh: Buffer[]): { ref: number; total: number; seq: number } | null {
  for (const ie of udh) {
    if (ie[0] === 0x00 && ie[1] === 3 && ie.length >= 5) return { ref: ie[2]!, total: ie[3]!, seq: ie[4]! };
    if (ie[0] === 0x08 && ie[1] === 4 && ie.length >= 6) return { ref: ie.readUInt16BE(2), total: ie[4]!, seq: ie[5]! };
  }
  return null;
}

function numeric(value: unknown): number | null {
  return typeof value === 'number' && Number.isInteger(value) ? value : null;
}

/** The inbound message (or part) a deliver_sm carries, or null when it carries no text at all. */
export function inboundFromPdu(routeName: string, pdu: PDU): InboundCarrierMessage | null {
  const short = decoded(pdu.short_message);
  const body = short && short.text.length > 0 ? short : decoded(pdu.message_payload);
  if (!body) return null;
  const destination = String(pdu.destination_addr ?? '');
  const to = Number(pdu.dest_addr_ton ?? 0) === TON.international && /^[0-9]+$/.test(destination) ? `+${destination}` : destination;
  const from = normaliseSender(String(pdu.source_addr ?? ''), Number(pdu.source_addr_ton ?? 0), to);
  const message: InboundCarrierMessage = { route: routeName, from, to, text: body.text, encoding: encodingOf(Number(pdu.data_coding ?? 0)) };
  const udhPart = concatenation(body.udh);
  const sarRef = numeric(pdu.sar_msg_ref_num);
  const sarTotal = numeric(pdu.sar_total_segments);
  const sarSeq = numeric(pdu.sar_segment_seqnum);
  const part = udhPart ?? (sarRef !== null && sarTotal !== null && sarSeq !== null ? { ref: sarRef, total: sarTotal, seq: sarSeq } : null);
  if (part && part.total > 1 && part.seq >= 1 && part.seq <= part.total) message.part = part;
  return message;
}
