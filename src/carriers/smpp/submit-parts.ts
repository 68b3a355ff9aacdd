/**
 * Builds the `submit_sm` fields of one message: one PDU per billed segment, concatenated with a
 * UDH when there is more than one. The split is `splitIntoParts`, the same routine that counted
 * the segments the customer paid for.
 */
import { splitIntoParts } from '../../domain/segmentation.ts';
import { encodeGsm7, encodeUcs2 } from './gsm7.ts';

export const DATA_CODING = { 'GSM-7': 0x00, 'UCS-2': 0x08 } as const;
/** esm_class bit: the short message starts with a User Data Header. */
export const ESM_CLASS_UDHI = 0x40;
/** registered_delivery: a receipt for the final outcome, success or failure. */
export const REGISTERED_DELIVERY_FINAL = 0x01;

export interface SubmitFields {
  source_addr_ton: number;
  source_addr_npi: number;
  source_addr: string;
  dest_addr_ton: number;
  dest_addr_npi: number;
  destination_addr: string;
  esm_class: number;
  registered_delivery: number;
  data_coding: number;
  short_message: Buffer;
  /** SMPP relative time (`YYMMDDhhmmss000R`), when the message has a validity period. */
  validity_period?: string;
}

/**
 * A validity period as SMPP relative time: `YYMMDDhhmmss000R`, here in days, hours, minutes and
 * seconds (Pigeon's periods are at most 72 hours). At least one second.
 */
export function relativeValidity(seconds: number): string {
  const s = Math.max(1, Math.floor(seconds));
  const two = (n: number) => String(n).padStart(2, '0');
  return `0000${two(Math.floor(s / 86_400))}${two(Math.floor((s % 86_400) / 3600))}${two(Math.floor((s % 3600) / 60))}${two(s % 60)}000R`;
}

/** TON/NPI for a Sender ID: international number, short code or alphanumeric. */
export function sourceAddress(sender: string): { ton: number; npi: number; addr: string } {
  if (/^\+\d{1,15}$/.test(sender)) return { ton: 1, npi: 1, addr: sender.slice(1) };
  if (/^\d{1,15}$/.test(sender)) return { ton: sender.length <= 8 ? 3 : 1, npi: sender.length <= 8 ? 0 : 1, addr: sender };
  return { ton: 5, npi: 0, addr: sender };
}

/** The concatenation header of part `seq` (1-based) of `total`: 8-bit reference IE (0x00). */
export function concatUdh(reference: number, total: number, seq: number): Buffer {
  return Buffer.from([0x05, 0x00, 0x03, reference & 0xff, total, seq]);
}

/**
 * The PDUs of one message. `reference` tells the parts of one message apart from another's on the
 * handset; it only needs to differ between messages in flight to the same recipient.
 */
export function buildSubmitParts(message: { recipient: string; sender: string; body: string; validUntil?: number }, reference: number, now = Date.now()): SubmitFields[] {
  const { encoding, parts } = splitIntoParts(message.body);
  const src = sourceAddress(message.sender);
  const encode = encoding === 'GSM-7' ? encodeGsm7 : encodeUcs2;
  const multi = parts.length > 1;
  return parts.map((text, i) => ({
    source_addr_ton: src.ton,
    source_addr_npi: src.npi,
    source_addr: src.addr,
    dest_addr_ton: 1,
    dest_addr_npi: 1,
    destination_addr: message.recipient.replace(/^\+/, ''),
    esm_class: multi ? ESM_CLASS_UDHI : 0,
    registered_delivery: REGISTERED_DELIVERY_FINAL,
    data_coding: DATA_CODING[encoding],
    short_message: multi ? Buffer.concat([concatUdh(reference, parts.length, i + 1), encode(text)]) : encode(text),
    // What is left of the period when it is handed over, relative: no clock to agree on with the SMSC.
    ...(message.validUntil === undefined ? {} : { validity_period: relativeValidity((message.validUntil - now) / 1000) }),
  }));
}
