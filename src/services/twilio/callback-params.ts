/**
 * The parameters of the Twilio-style requests Pigeon makes (DECISIONS.md §12): status callbacks of
 * messages sent through the Twilio-compatible API, and inbound messages posted to a number's
 * `sms_url`. They are stored as JSON in the webhook outbox (event `twilio.status` or
 * `twilio.inbound`) and sent form-encoded and signed with the account's Auth Token, the
 * `AccountSid` added as they go out (webhook-events.ts).
 */
import { eventForStatus } from '../../domain/message-status.ts';
import { messageSidOf } from '../../domain/twilio-sid.ts';
import { rawDlrDate, twilioErrorCode, twilioStatus } from '../../domain/twilio-message.ts';
import type { MessagesTable } from '../../store/database.ts';

export const TWILIO_API_VERSION = '2010-04-01';
export const TWILIO_STATUS_EVENT = 'twilio.status';
export const TWILIO_INBOUND_EVENT = 'twilio.inbound';

/** The status callback of a message as it is after a move, or null when the move announces nothing. */
export function statusCallbackParams(message: MessagesTable, now: number): Record<string, string> | null {
  if (eventForStatus(message.status) === null) return null;
  const sid = messageSidOf(message.id) ?? message.id;
  const status = twilioStatus(message.status, message.sent_at === null ? null : Number(message.sent_at));
  const params: Record<string, string> = {
    MessageSid: sid,
    SmsSid: sid,
    MessageStatus: status,
    SmsStatus: status,
    From: message.sender,
    To: message.recipient,
    ApiVersion: TWILIO_API_VERSION,
  };
  if (message.status === 'failed') params.ErrorCode = String(twilioErrorCode(message.error_code));
  // A receipt's outcome: delivered, or failed after the carrier had the message.
  if (message.status === 'delivered') params.RawDlrDoneDate = rawDlrDate(Number(message.delivered_at ?? now));
  else if (status === 'undelivered') params.RawDlrDoneDate = rawDlrDate(now);
  return params;
}

/** An inbound message as Twilio posts it to a number's `sms_url`. */
export function inboundParams(inbound: { id: string; sender: string; recipient: string; body: string; segments: number }): Record<string, string> {
  const sid = messageSidOf(inbound.id) ?? inbound.id;
  return {
    MessageSid: sid,
    SmsSid: sid,
    SmsMessageSid: sid,
    From: inbound.sender,
    To: inbound.recipient,
    Body: inbound.body,
    NumSegments: String(inbound.segments),
    NumMedia: '0',
    SmsStatus: 'received',
    ApiVersion: TWILIO_API_VERSION,
  };
}
