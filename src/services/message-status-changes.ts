/**
 * Moves messages forward through their states and records what follows from each move in the
 * same transaction: the webhook event in the outbox (when the message has a `callback_url`) and,
 * for a message the carrier refused before it was ever `sent`, the refund.
 */
import type { Transaction } from 'kysely';
import { canTransition, eventForStatus, type MessageStatus } from '../domain/message-status.ts';
import type { Database, MessagesTable } from '../store/database.ts';
import { creditCredits } from '../store/repositories/ledger.repository.ts';
import { enqueueJobs, type NewJob } from '../store/repositories/jobs.repository.ts';
import { iso, newId } from '../util/ids.ts';
import { preparedWrite } from '../store/prepared-statements.ts';
import { messageTransitions } from '../metrics.ts';

export interface StatusChange {
  to: MessageStatus;
  at: number;
  carrierMessageId?: string;
  errorCode?: string;
  errorMessage?: string;
}

/** The webhook payload of spec §6.2, built from the message as it is after the change. */
export function webhookPayload(message: MessagesTable, now: number): Record<string, unknown> | null {
  const event = eventForStatus(message.status);
  if (!event) return null;
  const payload: Record<string, unknown> = {
    event,
    message_id: message.id,
    batch_id: message.batch_id,
    to: message.recipient,
    from: message.sender,
    status: message.status,
    delivered_at: iso(message.delivered_at === null ? null : Number(message.delivered_at)),
    sent_at: iso(message.sent_at === null ? null : Number(message.sent_at)),
    timestamp: iso(now),
  };
  if (message.status === 'failed') {
    payload.error_code = message.error_code ?? 'unknown';
    payload.error_message = message.error_message ?? 'Delivery failed.';
  }
  return payload;
}

/** Guarded by the current status: only one of two concurrent workers can make the same move. */
const updateStatus = preparedWrite(
  (
    db,
    status: string,
    sentAt: number | null,
    deliveredAt: number | null,
    carrierMessageId: string | null,
    errorCode: string | null,
    errorMessage: string | null,
    now: number,
    id: string,
    previous: string,
  ) =>
    db
      .updateTable('messages')
      .set({
        status: status as MessageStatus,
        sent_at: sentAt,
        delivered_at: deliveredAt,
        carrier_message_id: carrierMessageId,
        error_code: errorCode,
        error_message: errorMessage,
        updated_at: now,
      })
      .where('id', '=', id)
      .where('status', '=', previous as MessageStatus),
);

/**
 * Applies one change if the state machine allows it, guarded in SQL by the current status so a
 * duplicate or late report (at-least-once delivery of jobs and receipts) changes nothing.
 * Returns the updated message, or null when the change did not apply.
 */
export async function applyStatusChange(
  trx: Transaction<Database>,
  message: MessagesTable,
  change: StatusChange,
  now: number,
  followUps: NewJob[],
): Promise<MessagesTable | null> {
  if (!canTransition(message.status, change.to)) return null;
  const next: MessagesTable = { ...message, status: change.to, updated_at: now };
  if (change.to === 'sent') next.sent_at = change.at;
  if (change.to === 'delivered') next.delivered_at = change.at;
  if (change.carrierMessageId !== undefined) next.carrier_message_id = change.carrierMessageId;
  if (change.to === 'failed') {
    next.error_code = change.errorCode ?? 'unknown';
    next.error_message = change.errorMessage ?? 'Delivery failed.';
  }
  const result = await updateStatus(
    trx,
    next.status,
    next.sent_at,
    next.delivered_at,
    next.carrier_message_id,
    next.error_code,
    next.error_message,
    now,
    message.id,
    message.status,
  );
  if (result.numAffectedRows === 0n) return null;
  messageTransitions.inc({ status: change.to });

  // Refused before it ever left: the customer paid for nothing, so the segments come back.
  if (message.status === 'pending' && change.to === 'failed') {
    await creditCredits(trx, message.account_id, message.segments, 'refund', message.id, next.error_code, now);
  }
  if (next.callback_url) {
    const payload = webhookPayload(next, now);
    if (payload) {
      const eventId = newId('evt', now);
      await trx
        .insertInto('webhook_events')
        .values({
          id: eventId,
          account_id: next.account_id,
          message_id: next.id,
          batch_id: next.batch_id,
          event: payload.event as string,
          url: next.callback_url,
          payload: JSON.stringify(payload),
          status: 'pending',
          attempts: 0,
          last_error: null,
          created_at: now,
          updated_at: now,
        })
        .execute();
      followUps.push({ queue: 'webhook', ref: eventId, runAt: now });
    }
  }
  return next;
}

/** Flushes the follow-up jobs collected while applying changes. */
export async function enqueueFollowUps(trx: Transaction<Database>, jobs: NewJob[], now: number): Promise<void> {
  if (jobs.length > 0) await enqueueJobs(trx, jobs, now);
}
