/**
 * Receipts for messages submitted over SMPP (DECISIONS.md §10), written in the transaction that
 * moves the message, as its webhook event is: a status change and its receipt are committed
 * together or not at all. One receipt per part's id, as `registered_delivery` asks; the
 * listener's outbox pump sends them to the user's receiver binds.
 */
import type { MessagesTable } from '../../store/database.ts';
import type { Executor } from '../../store/connect.ts';
import { enqueueSmppDeliveries, smppMessagesAmong, type SmppOutboxRow } from '../../store/repositories/smpp-outbox.repository.ts';
import { messagesByIds } from '../../store/repositories/messages.repository.ts';
import { newId } from '../../util/ids.ts';
import { receiptFields, receiptWanted, type ReceiptStat } from './smpp-outbox.ts';

/**
 * How long a receipt written here waits for a receiver bind at most; the listener's sweep applies
 * SMPP_SERVER_QUEUE_HOURS to every row, so this is only the ceiling of that setting.
 */
const RECEIPT_CEILING_MS = 30 * 24 * 3_600_000;

function statOf(previous: MessagesTable['status'], next: MessagesTable): ReceiptStat | null {
  switch (next.status) {
    case 'sent':
      return 'ENROUTE';
    case 'delivered':
      return 'DELIVRD';
    case 'canceled':
      return 'DELETED';
    case 'failed':
      if (next.error_code === 'expired') return 'EXPIRED';
      if (next.error_code === 'deleted') return 'DELETED';
      // Refused before it ever left Pigeon, or by the carrier as such.
      if (previous === 'pending' || previous === 'scheduled' || next.error_code === 'rejected') return 'REJECTD';
      return 'UNDELIV';
    default:
      return null;
  }
}

/** The carrier's or Pigeon's error as the receipt's three digits: a number when there is one. */
function errDigits(next: MessagesTable): number {
  const match = /(\d{1,3})$/.exec(next.error_code ?? '');
  return match ? Number(match[1]) : 0;
}

/** Queues the receipts the moves of messages submitted over SMPP call for; one query for the rest. */
export async function enqueueSmppReceipts(db: Executor, moves: readonly { previous: MessagesTable['status']; next: MessagesTable }[], now: number): Promise<void> {
  const relevant = moves.filter((m) => statOf(m.previous, m.next) !== null);
  if (relevant.length === 0) return;
  const details = await smppMessagesAmong(db, relevant.map((m) => m.next.id));
  if (details.length === 0) return;
  const byId = new Map(details.map((d) => [d.message_id, d]));
  const rows: SmppOutboxRow[] = [];
  for (const { previous, next } of relevant) {
    const detail = byId.get(next.id);
    const stat = statOf(previous, next);
    if (!detail || !stat || !receiptWanted(detail.registered_delivery, stat)) continue;
    for (const partId of detail.part_ids.split(',')) {
      const fields = receiptFields({
        partId,
        stat,
        err: stat === 'DELIVRD' || stat === 'ENROUTE' ? 0 : errDigits(next),
        submittedAt: Number(next.created_at),
        doneAt: now,
        text: next.body,
        sourceAddr: detail.source_addr,
        sourceTon: detail.source_ton,
        destinationAddr: detail.destination_addr,
      });
      rows.push({
        id: newId('smd', now),
        system_id: detail.system_id,
        kind: 'receipt',
        message_id: next.id,
        pdu: JSON.stringify(fields),
        attempts: 0,
        next_at: now,
        created_at: now,
        expires_at: now + RECEIPT_CEILING_MS,
      });
    }
  }
  await enqueueSmppDeliveries(db, rows);
}

/** DELETED receipts for canceled scheduled messages, read only for those that came over SMPP. */
export async function enqueueSmppCancelReceipts(db: Executor, messageIds: readonly string[], now: number): Promise<void> {
  const details = await smppMessagesAmong(db, messageIds);
  if (details.length === 0) return;
  const messages = await messagesByIds(db, details.map((d) => d.message_id));
  await enqueueSmppReceipts(db, messages.map((next) => ({ previous: 'scheduled' as const, next })), now);
}
