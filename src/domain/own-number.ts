/**
 * The phone numbers an account can be assigned (DECISIONS.md §8): a long number in E.164 (with
 * the same visual separators `to` accepts), or a short code of 3 to 8 digits. Both are kept in
 * one canonical spelling, which is also how a send's `from` finds them.
 */
import { parseRecipient } from './phone-number.ts';

export type OwnNumberResult = { ok: true; number: string; kind: 'long' | 'short' } | { ok: false; reason: string };

const SHORT_CODE = /^[0-9]{3,8}$/;

export function parseOwnNumber(input: string): OwnNumberResult {
  if (SHORT_CODE.test(input)) return { ok: true, number: input, kind: 'short' };
  if (input.startsWith('+')) {
    const parsed = parseRecipient(input);
    return parsed.ok ? { ok: true, number: parsed.e164, kind: 'long' } : { ok: false, reason: `it is not a valid E.164 number: ${parsed.reason}` };
  }
  return { ok: false, reason: 'a number is either E.164 ("+" and the country calling code) or a short code of 3 to 8 digits.' };
}

/** The canonical number `from` may name, or null when it cannot be a number (then it is a Sender ID name). */
export function numberKeyOfSender(from: string): string | null {
  const parsed = parseOwnNumber(from);
  return parsed.ok ? parsed.number : null;
}
