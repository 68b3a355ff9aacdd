/**
 * Inbound messages posted Twilio-style to a number's `sms_url` (DECISIONS.md §12), and the TwiML
 * that answers them: each `<Message>` is sent back from the number to the sender through the one
 * acceptance (`sendMessage`: charged, opt-outs and every other rule apply). An answer that is not
 * the TwiML Pigeon reads is logged and sends nothing.
 */
import type { Transaction } from 'kysely';
import { readTwiml } from '../../domain/twiml.ts';
import { AppError } from '../../errors/catalogue.ts';
import type { Database, WebhookEventsTable } from '../../store/database.ts';
import { insertRows } from '../../store/insert-rows.ts';
import { enqueueJobs } from '../../store/repositories/jobs.repository.ts';
import { newId } from '../../util/ids.ts';
import { sendMessage } from '../messages/submit-messages.ts';
import type { Context } from '../context.ts';
import { inboundParams, TWILIO_INBOUND_EVENT } from './callback-params.ts';

/** Queues the Twilio-style post of an inbound message, in the transaction that stores it. */
export async function queueInboundPost(
  trx: Transaction<Database>,
  holder: { account_id: string; sms_url?: string | null },
  inbound: { id: string; sender: string; recipient: string; body: string; segments: number },
  now: number,
): Promise<void> {
  if (!holder.sms_url) return;
  const id = newId('evt', now);
  const row: WebhookEventsTable = {
    id,
    account_id: holder.account_id,
    message_id: null,
    inbound_id: inbound.id,
    batch_id: null,
    event: TWILIO_INBOUND_EVENT,
    url: holder.sms_url,
    payload: JSON.stringify(inboundParams(inbound)),
    status: 'pending',
    attempts: 0,
    last_error: null,
    created_at: now,
    updated_at: now,
  };
  await insertRows(trx, 'webhook_events', [row]);
  await enqueueJobs(trx, [{ queue: 'webhook', ref: id, runAt: now }], now);
}

/**
 * Sends the replies of a TwiML answer to an inbound post. The inbound message's own parameters
 * (stored with the event) say who wrote to which number. Never throws: a reply refused (opted
 * out, no credits) or an unreadable answer is logged.
 */
export async function answerInboundPost(ctx: Context, event: { id: string; account_id: string; payload: string }, answer: string): Promise<number> {
  const reading = readTwiml(answer);
  if (!reading.ok) {
    ctx.log.warn({ eventId: event.id, accountId: event.account_id, reason: reading.reason }, `TwiML answer not used: ${reading.reason}`);
    return 0;
  }
  const params = JSON.parse(event.payload) as Record<string, string>;
  let sent = 0;
  for (const text of reading.messages) {
    try {
      await sendMessage(ctx, { accountId: event.account_id }, { to: params.From ?? '', from: params.To ?? '', message: text });
      sent++;
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      ctx.log.warn({ eventId: event.id, accountId: event.account_id, code: error.code }, `TwiML reply not sent: ${error.code}`);
    }
  }
  if (sent > 0) ctx.wake('dispatch');
  return sent;
}
