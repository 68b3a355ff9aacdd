/**
 * How a Pigeon message reads as a Twilio Message resource (DECISIONS.md §12): its status, its
 * failure as one of Twilio's delivery error codes, and its dates.
 */
import type { MessageStatus } from './message-status.ts';

export type TwilioStatus = 'scheduled' | 'queued' | 'sent' | 'delivered' | 'undelivered' | 'failed' | 'canceled';

/** A failure after the message was `sent` is Twilio's `undelivered`; one before it, `failed`. */
export function twilioStatus(status: MessageStatus, sentAt: number | null): TwilioStatus {
  switch (status) {
    case 'pending':
      return 'queued';
    case 'failed':
      return sentAt === null ? 'failed' : 'undelivered';
    default:
      return status;
  }
}

/** Twilio's delivery error codes that Pigeon's failures map to, with Twilio's meaning. */
export const TWILIO_DELIVERY_ERRORS = {
  30003: 'Unreachable destination handset',
  30005: 'Unknown destination handset',
  30006: 'Landline or unreachable carrier',
  30007: 'Message filtered by the carrier',
  30008: 'Unknown error',
} as const;
export type TwilioDeliveryError = keyof typeof TWILIO_DELIVERY_ERRORS;

/** Pigeon's failure codes (`error_code` of a failed message) by the Twilio code they map to. */
export const DELIVERY_ERROR_MAP: Readonly<Record<string, TwilioDeliveryError>> = {
  // The handset could not be reached, or the message could not wait for it.
  subscriber_unreachable: 30003,
  undeliverable: 30003,
  expired: 30003,
  deleted: 30003,
  // The carrier does not know the number.
  smpp_rinvdstadr: 30005,
  smpp_rinvdstton: 30005,
  smpp_rinvdstnpi: 30005,
  invalid_recipient: 30005,
  // No carrier route reaches it.
  no_route: 30006,
  destination_not_allowed: 30006,
  smpp_no_response: 30006,
  // Refused on the way: by the carrier, or by the send-time checks (opt-out, sender withdrawn).
  rejected: 30007,
  carrier_rejected: 30007,
  recipient_opted_out: 30007,
  invalid_sender_id: 30007,
  account_suspended: 30007,
  smpp_rinvsrcadr: 30007,
};

/** The Twilio code of a Pigeon failure code; anything unlisted is 30008 (unknown error). */
export function twilioErrorCode(pigeonCode: string | null): TwilioDeliveryError {
  return (pigeonCode !== null ? DELIVERY_ERROR_MAP[pigeonCode] : undefined) ?? 30008;
}

/** RFC 2822 in UTC with a numeric zone, as Twilio writes dates: `Thu, 26 Nov 2026 17:33:47 +0000`. */
export function rfc2822(ms: number): string {
  return new Date(ms).toUTCString().replace(/GMT$/, '+0000');
}

/** `YYMMDDhhmm` in UTC, as SMPP receipts write their done date (Twilio's `RawDlrDoneDate`). */
export function rawDlrDate(ms: number): string {
  const d = new Date(ms);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(d.getUTCFullYear() % 100)}${two(d.getUTCMonth() + 1)}${two(d.getUTCDate())}${two(d.getUTCHours())}${two(d.getUTCMinutes())}`;
}

/** Credits charged as Twilio writes a price: negative, two decimals (`-2.00`). */
export function twilioPrice(credits: number): string {
  return (-credits).toFixed(2);
}
