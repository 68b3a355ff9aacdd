/**
 * Redaction (DECISIONS.md §13): what is left of a message's text and of a person's number once
 * they are redacted. Both are idempotent, so a repeated redaction changes nothing.
 */

/** What a redacted message's text becomes. */
export const REDACTED_TEXT = '';

/**
 * A number with its last four digits as `XXXX` (`+447700900123` -> `+44770090XXXX`): enough to
 * tell a support call which recipient it was, not enough to reach them. A sender that does not
 * end in four digits (an alphanumeric Sender ID) is no one's number and stays as it is.
 */
export function maskNumber(value: string): string {
  return value.replace(/\d{4}$/, 'XXXX');
}

/** Whether `value` is already masked (or has nothing to mask). */
export function isMasked(value: string): boolean {
  return maskNumber(value) === value;
}

/**
 * A stored webhook payload (JSON) with the text and the number of a redacted message taken out:
 * every `message` (and Twilio-style `Body`) field emptied, and every string equal to one of `numbers` masked, wherever they
 * are in the payload (delivery events carry `to`, account events `data.from` and `data.phone`).
 */
export function redactPayload(payload: string, numbers: readonly string[]): string {
  return rewritePayload(payload, { text: true, numbers });
}

/**
 * A stored payload with `numbers` masked and, when `text` is true, every `message` field (and the
 * `url` of `sms.link_clicked`) emptied:
 * what the retention purge does to the events of a message whose text or number is due.
 */
export function rewritePayload(payload: string, opts: { text: boolean; numbers: readonly string[] }): string {
  const { text, numbers } = opts;
  const masked = new Set(numbers.filter((n) => !isMasked(n)));
  const parsed = JSON.parse(payload) as unknown;
  // A link of the text, in `sms.link_clicked` (DECISIONS.md §16), is text too.
  const linkClick = (parsed as { event?: unknown } | null)?.event === 'sms.link_clicked';
  const walk = (value: unknown, key: string | null): unknown => {
    if (typeof value === 'string') {
      // `Body`: the text in a Twilio-style inbound post (DECISIONS.md §12).
      if (text && (key === 'message' || key === 'Body' || (linkClick && key === 'url'))) return REDACTED_TEXT;
      return masked.has(value) ? maskNumber(value) : value;
    }
    if (Array.isArray(value)) return value.map((v) => walk(v, null));
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, k)]));
    return value;
  };
  return JSON.stringify(walk(parsed, null));
}
