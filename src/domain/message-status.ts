/**
 * The message lifecycle. Carrier callbacks arrive late, twice or out of order,
 * so a status only ever moves forward; a stale report can never undo a newer one.
 * A message sent with `send_at` starts `scheduled`: the scheduler releases it to `pending`, or
 * the customer cancels it (`canceled`, final); neither ever goes back.
 */

/** Where a message is in its life; stored on the message row and shown in the API. */
export type MessageStatus = 'scheduled' | 'pending' | 'sent' | 'delivered' | 'failed' | 'canceled';

/** Every status in lifecycle order, for validation schemas and exhaustive loops. */
export const MESSAGE_STATUSES = Object.freeze(['scheduled', 'pending', 'sent', 'delivered', 'failed', 'canceled'] as const) satisfies readonly MessageStatus[];

/** The webhook events customers subscribe to, one per status change they can act on. */
export type WebhookEventType = 'sms.sent' | 'sms.delivered' | 'sms.failed';

const NEXT: Readonly<Record<MessageStatus, readonly MessageStatus[]>> = {
  scheduled: ['pending', 'canceled'],
  pending: ['sent', 'failed'],
  sent: ['delivered', 'failed'],
  delivered: [],
  failed: [],
  canceled: [],
};

/**
 * Whether an incoming status change may be applied; a repeat of the current
 * status is not a change, so duplicates produce no second webhook.
 */
export function canTransition(from: MessageStatus, to: MessageStatus): boolean {
  return NEXT[from].includes(to);
}

/** Whether a message has reached the end of its life and will never change again. */
export function isFinal(status: MessageStatus): boolean {
  return NEXT[status].length === 0;
}

/**
 * The webhook to send when a message enters a status; `scheduled` and `pending` are before
 * anything happened, and a `canceled` message never left, so they announce nothing.
 */
export function eventForStatus(status: MessageStatus): WebhookEventType | null {
  switch (status) {
    case 'scheduled':
    case 'pending':
    case 'canceled':
      return null;
    case 'sent':
      return 'sms.sent';
    case 'delivered':
      return 'sms.delivered';
    case 'failed':
      return 'sms.failed';
  }
}
