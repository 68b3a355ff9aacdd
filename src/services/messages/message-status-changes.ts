/**
 * Moves messages forward through their states and records what follows from each move in the
 * same transaction: the webhook event in the outbox (when the message has a `callback_url`, and
 * the send asked for that event) and,
 * for a message the carrier refused before it was ever `sent`, the refund.
 */
import type { Transaction } from 'kysely';
import { canTransition, eventForStatus, type MessageStatus } from '../../domain/message-status.ts';
import { chargedCredits } from '../../domain/rate-card.ts';
import type { Database, MessagesTable, WebhookEventsTable } from '../../store/database.ts';
import { insertRows } from '../../store/insert-rows.ts';
import { creditCredits } from '../../store/repositories/ledger.repository.ts';
import { enqueueJobs, type NewJob } from '../../store/repositories/jobs.repository.ts';
import { iso, newId } from '../../util/ids.ts';
import { moveMessage, moveMessages, type MessageMove } from '../../store/repositories/messages.repository.ts';
import { messageTransitions } from '../../metrics.ts';
import { enqueueSmppReceipts } from '../smpp-access/smpp-receipts.ts';
import { statusCallbackParams, TWILIO_STATUS_EVENT } from '../twilio/callback-params.ts';

export interface StatusChange {
  to: MessageStatus;
  at: number;
  carrierMessageId?: string;
  errorCode?: string;
  errorMessage?: string;
  /** The routes the carrier reports for this outcome (`sent`): written by the same UPDATE. */
  routes?: Pick<MessagesTable, 'route' | 'route_cost' | 'routes_tried'>;
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

/** The message after `change`, or null if the state machine does not allow it. */
function nextState(message: MessagesTable, change: StatusChange, now: number): MessagesTable | null {
  if (!canTransition(message.status, change.to)) return null;
  const next: MessagesTable = { ...message, status: change.to, updated_at: now };
  if (change.to === 'sent') next.sent_at = change.at;
  if (change.to === 'delivered') next.delivered_at = change.at;
  if (change.carrierMessageId !== undefined) next.carrier_message_id = change.carrierMessageId;
  if (change.routes) Object.assign(next, { route: change.routes.route, route_cost: change.routes.route_cost, routes_tried: change.routes.routes_tried });
  if (change.to === 'failed') {
    next.error_code = change.errorCode ?? 'unknown';
    next.error_message = change.errorMessage ?? 'Delivery failed.';
  }
  return next;
}

/** What follows from a change that applied: the refund, and the webhook event (returned). */
async function afterChange(trx: Transaction<Database>, previous: MessagesTable, next: MessagesTable, now: number, followUps: NewJob[]): Promise<WebhookEventsTable | null> {
  messageTransitions.inc({ status: next.status });
  // Refused before it ever left: the customer paid for nothing, so what was charged comes back.
  // An opt-out confirmation (charged 0) was free: nothing to give back.
  if (previous.status === 'pending' && next.status === 'failed' && Number(previous.charged ?? 1) !== 0) {
    const charged = chargedCredits(previous);
    if (charged > 0) await creditCredits(trx, previous.account_id, charged, 'refund', previous.id, next.error_code, now);
  }
  if (!next.callback_url) return null;
  const twilio = next.callback_format === 'twilio';
  // A send that named its events (`callback_events`) gets those alone.
  if (!twilio && next.callback_events != null && !next.callback_events.split(',').includes(eventForStatus(next.status) ?? '')) return null;
  const payload = twilio ? statusCallbackParams(next, now) : webhookPayload(next, now);
  if (!payload) return null;
  const eventId = newId('evt', now);
  followUps.push({ queue: 'webhook', ref: eventId, runAt: now });
  return {
    id: eventId,
    account_id: next.account_id,
    message_id: next.id,
    batch_id: next.batch_id,
    event: twilio ? TWILIO_STATUS_EVENT : (payload.event as string),
    url: next.callback_url,
    payload: JSON.stringify(payload),
    status: 'pending',
    attempts: 0,
    last_error: null,
    created_at: now,
    updated_at: now,
  };
}

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
  const next = nextState(message, change, now);
  if (!next) return null;
  if (!(await moveMessage(trx, { previous: message, next }, now))) return null;
  const event = await afterChange(trx, message, next, now, followUps);
  if (event) await insertRows(trx, 'webhook_events', [event]);
  await enqueueSmppReceipts(trx, [{ previous: message.status, next }], now);
  return next;
}

/**
 * `applyStatusChange` for many messages at once, with the same guard and the same follow-ups;
 * returns, for each item, the updated message or null. The moves are written together
 * (`moveMessages`, which batches them where the dialect gains from it); a message named twice
 * gets its later changes one by one afterwards, as a loop of `applyStatusChange` over the items
 * would.
 */
export async function applyStatusChanges(
  trx: Transaction<Database>,
  items: { message: MessagesTable; change: StatusChange }[],
  now: number,
  followUps: NewJob[],
): Promise<(MessagesTable | null)[]> {
  const nexts = items.map(({ message, change }) => nextState(message, change, now));
  const named = new Set<string>();
  const repeats: number[] = [];
  const moves: MessageMove[] = [];
  items.forEach(({ message }, i) => {
    const next = nexts[i];
    if (!next) return;
    if (named.has(message.id)) {
      repeats.push(i);
      nexts[i] = null;
      return;
    }
    named.add(message.id);
    moves.push({ previous: message, next });
  });
  const moved = await moveMessages(trx, moves, now);
  const events: WebhookEventsTable[] = [];
  const out: (MessagesTable | null)[] = [];
  const applied: { previous: MessageStatus; next: MessagesTable }[] = [];
  for (const [i, { message }] of items.entries()) {
    const next = nexts[i];
    if (!next || !moved.has(next.id)) {
      out.push(null);
      continue;
    }
    const event = await afterChange(trx, message, next, now, followUps);
    if (event) events.push(event);
    applied.push({ previous: message.status, next });
    out.push(next);
  }
  await insertRows(trx, 'webhook_events', events);
  await enqueueSmppReceipts(trx, applied, now);
  for (const i of repeats) out[i] = await applyStatusChange(trx, items[i]!.message, items[i]!.change, now, followUps);
  return out;
}

/** Flushes the follow-up jobs collected while applying changes. */
export async function enqueueFollowUps(trx: Transaction<Database>, jobs: NewJob[], now: number): Promise<void> {
  if (jobs.length > 0) await enqueueJobs(trx, jobs, now);
}
