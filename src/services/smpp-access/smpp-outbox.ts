/**
 * The deliver_sm owed to SMPP users (DECISIONS.md §10): receipts in the Appendix B text with the
 * `receipted_message_id` and `message_state` TLVs, one per part's id, and later inbound messages,
 * kept in the database per user until one of its receiver binds answers them or
 * SMPP_SERVER_QUEUE_HOURS pass. Nothing waiting lives only in memory, so a restart or a dropped
 * connection loses nothing.
 */
import { newId } from '../../util/ids.ts';
import { randomInt } from 'node:crypto';
import { encodeGsm7, encodeGsm7Replacing, encodeUcs2 } from '../../carriers/smpp/gsm7.ts';
import { concatUdh, sourceAddress } from '../../carriers/smpp/submit-parts.ts';
import { splitIntoParts } from '../../domain/segmentation.ts';
import { listSmppUserRows } from '../../store/repositories/smpp-users.repository.ts';
import type { Executor } from '../../store/connect.ts';
import {
  deleteExpiredSmppDeliveries,
  deleteSmppDeliveries,
  enqueueSmppDeliveries,
  postponeSmppDelivery,
  releaseSmppDeliveries,
  takeSmppDeliveries,
  type SmppOutboxRow,
} from '../../store/repositories/smpp-outbox.repository.ts';
import type { Context } from '../context.ts';


/** What a deliver_sm carries, kept as JSON while it waits. */
export interface DeliverFields {
  source_addr_ton: number;
  source_addr_npi: number;
  source_addr: string;
  dest_addr_ton: number;
  dest_addr_npi: number;
  destination_addr: string;
  esm_class: number;
  data_coding: number;
  /** Hex. */
  short_message: string;
  /** Tag and hex value of each optional parameter. */
  tlvs: [number, string][];
}

export type ReceiptStat = 'DELIVRD' | 'UNDELIV' | 'EXPIRED' | 'REJECTD' | 'DELETED' | 'ENROUTE';

/** `message_state` (0x0427) of each stat. */
export const MESSAGE_STATE: Record<ReceiptStat, number> = { ENROUTE: 1, DELIVRD: 2, EXPIRED: 3, DELETED: 4, UNDELIV: 5, REJECTD: 8 };

const ESM_CLASS_RECEIPT = 0x04;
const TLV_RECEIPTED_MESSAGE_ID = 0x001e;
const TLV_MESSAGE_STATE = 0x0427;

function smppDate(at: number): string {
  const d = new Date(at);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(d.getUTCFullYear() % 100)}${two(d.getUTCMonth() + 1)}${two(d.getUTCDate())}${two(d.getUTCHours())}${two(d.getUTCMinutes())}`;
}

/**
 * A receipt goes as `data_coding` 0, which ESMEs read as GSM 03.38 (the `smpp` package and
 * Kannel do): `_` and `@` are not where ASCII has them. The quoted text keeps what GSM can say.
 */
function gsmText(text: string): Buffer {
  return encodeGsm7Replacing(text, '?');
}

export interface ReceiptInput {
  partId: string;
  stat: ReceiptStat;
  err: number;
  submittedAt: number;
  doneAt: number;
  text: string;
  /** The submit's addresses: the receipt swaps them. */
  sourceAddr: string;
  sourceTon: number;
  destinationAddr: string;
}

export function receiptFields(r: ReceiptInput): DeliverFields {
  const delivered = r.stat === 'DELIVRD' ? '001' : '000';
  const err = String(Math.max(0, Math.min(999, r.err))).padStart(3, '0');
  const text = `id:${r.partId} sub:001 dlvrd:${delivered} submit date:${smppDate(r.submittedAt)} done date:${smppDate(r.doneAt)} stat:${r.stat} err:${err} text:${Array.from(r.text).slice(0, 20).join('')}`;
  return {
    source_addr_ton: 1,
    source_addr_npi: 1,
    source_addr: r.destinationAddr.replace(/^\+/, ''),
    dest_addr_ton: r.sourceTon,
    dest_addr_npi: r.sourceTon === 5 ? 0 : 1,
    destination_addr: r.sourceAddr,
    esm_class: ESM_CLASS_RECEIPT,
    data_coding: 0,
    short_message: gsmText(text).toString('hex'),
    tlvs: [
      [TLV_RECEIPTED_MESSAGE_ID, Buffer.concat([Buffer.from(r.partId, 'latin1'), Buffer.from([0])]).toString('hex')],
      [TLV_MESSAGE_STATE, Buffer.from([MESSAGE_STATE[r.stat]]).toString('hex')],
    ],
  };
}

/** Whether `registered_delivery` asks for a receipt in this state (bits 0-1: 1 final, 2 failure; bit 4 intermediate). */
export function receiptWanted(registeredDelivery: number, stat: ReceiptStat): boolean {
  if (stat === 'ENROUTE') return (registeredDelivery & 0x10) !== 0;
  const final = registeredDelivery & 0x03;
  return final === 1 || (final === 2 && stat !== 'DELIVRD');
}

function outboxRow(ctx: Context, systemId: string, kind: SmppOutboxRow['kind'], messageId: string | null, fields: DeliverFields, now: number): SmppOutboxRow {
  return {
    id: newId('smd', now),
    system_id: systemId,
    kind,
    message_id: messageId,
    pdu: JSON.stringify(fields),
    attempts: 0,
    next_at: now,
    created_at: now,
    expires_at: now + ctx.config.smppServer.queueHours * 3_600_000,
  };
}

export async function enqueueReceipts(ctx: Context, db: Executor, systemId: string, messageId: string, receipts: readonly ReceiptInput[]): Promise<void> {
  const now = ctx.clock();
  await enqueueSmppDeliveries(db, receipts.map((r) => outboxRow(ctx, systemId, 'receipt', messageId, receiptFields(r), now)));
}

/** Parts that were answered but will never be sent (a refusal at the last part, or the rest never came). */
export interface PartsRejection {
  systemId: string;
  partIds: string[];
  text: string;
  registeredDelivery: number;
  sourceAddr: string;
  sourceTon: number;
  destinationAddr: string;
}

export async function enqueuePartsRejections(ctx: Context, items: readonly PartsRejection[], db: Executor = ctx.store.db): Promise<void> {
  const now = ctx.clock();
  const rows: SmppOutboxRow[] = [];
  for (const item of items) {
    if (!receiptWanted(item.registeredDelivery, 'REJECTD')) continue;
    for (const partId of item.partIds) {
      rows.push(outboxRow(ctx, item.systemId, 'receipt', item.partIds[0]!, receiptFields({ ...item, partId, stat: 'REJECTD', err: 0, submittedAt: now, doneAt: now }), now));
    }
  }
  await enqueueSmppDeliveries(db, rows);
}

export interface Delivery {
  id: string;
  fields: DeliverFields;
  attempts: number;
}

export async function takeDeliveries(ctx: Context, systemId: string, holdMs: number, limit: number): Promise<Delivery[]> {
  const now = ctx.clock();
  const rows = await takeSmppDeliveries(ctx.store.db, systemId, now, now + holdMs, limit);
  return rows.map((r) => ({ id: r.id, fields: JSON.parse(r.pdu) as DeliverFields, attempts: r.attempts }));
}

/** Deliveries out on links that closed before answering: due again now, in one statement. */
export async function deliveriesReleased(ctx: Context, ids: readonly string[]): Promise<void> {
  await releaseSmppDeliveries(ctx.store.db, ids, ctx.clock());
}

/** Deliveries answered (or refused for good): gone, in one statement. */
export async function deliveriesAnswered(ctx: Context, ids: readonly string[]): Promise<void> {
  await deleteSmppDeliveries(ctx.store.db, ids);
}

/** A temporary refusal: due again after a back-off that doubles from 1 s up to 5 minutes. */
export async function deliveryRefusedForNow(ctx: Context, delivery: Pick<Delivery, 'id' | 'attempts'>): Promise<void> {
  const wait = Math.min(300_000, 1000 * 2 ** Math.max(0, delivery.attempts - 1));
  await postponeSmppDelivery(ctx.store.db, delivery.id, ctx.clock() + wait);
}

/** What waited longer than SMPP_SERVER_QUEUE_HOURS goes. */
export async function sweepExpiredDeliveries(ctx: Context): Promise<number> {
  const now = ctx.clock();
  return deleteExpiredSmppDeliveries(ctx.store.db, now, now - ctx.config.smppServer.queueHours * 3_600_000);
}

/** How long an inbound message written in another transaction waits at most (the sweep applies SMPP_SERVER_QUEUE_HOURS). */
const INBOUND_CEILING_MS = 30 * 24 * 3_600_000;

/**
 * An inbound message to one of the account's numbers, as deliver_sm for each of its SMPP users
 * (`esm_class` 0, GSM 03.38 or UCS-2, a long one in UDH parts), written in the transaction that
 * stores the message.
 */
export async function enqueueSmppInbound(db: Executor, accountId: string, inbound: { id: string; sender: string; recipient: string; body: string }, now: number): Promise<void> {
  const users = await listSmppUserRows(db, { accountId });
  if (users.length === 0) return;
  const { encoding, parts } = splitIntoParts(inbound.body);
  const source = sourceAddress(inbound.sender);
  const destination = sourceAddress(inbound.recipient);
  const reference = randomInt(256);
  const pdus: DeliverFields[] = parts.map((text, i) => {
    const bytes = encoding === 'GSM-7' ? encodeGsm7(text) : encodeUcs2(text);
    const sm = parts.length > 1 ? Buffer.concat([concatUdh(reference, parts.length, i + 1), bytes]) : bytes;
    return {
      source_addr_ton: source.ton,
      source_addr_npi: source.npi,
      source_addr: source.addr,
      dest_addr_ton: destination.ton,
      dest_addr_npi: destination.npi,
      destination_addr: destination.addr,
      esm_class: parts.length > 1 ? 0x40 : 0,
      data_coding: encoding === 'GSM-7' ? 0 : 8,
      short_message: sm.toString('hex'),
      tlvs: [],
    };
  });
  const rows: SmppOutboxRow[] = [];
  for (const user of users) {
    for (const fields of pdus) {
      rows.push({ id: newId('smd', now), system_id: user.system_id, kind: 'inbound', message_id: inbound.id, pdu: JSON.stringify(fields), attempts: 0, next_at: now, created_at: now, expires_at: now + INBOUND_CEILING_MS });
    }
  }
  await enqueueSmppDeliveries(db, rows);
}
