/**
 * Recipient validation: E.164 syntax first (cheap regexes, on the hot path of
 * 10,000-number bulk requests), then libphonenumber-js for the length rules of
 * the country calling code.
 */
// Metadata build: `max`. Possibility only needs each country's possible
// lengths, and `min` carries the same lengths (checked on 1.13.16), but where
// several countries share a calling code (+1, +7, +44, +47, +358...) the
// country, and so which lengths apply, is resolved from national-number
// patterns that `min` trims for many of them; `max` resolves exactly like
// Google's libphonenumber, and its extra ~70 kB is irrelevant on a server.
// Not `mobile`: it drops non-mobile ranges and calls some possible numbers
// impossible (e.g. +1 310 xxxx). Only `isPossible()` is used, never
// `isValid()`, so freshly assigned ranges are not rejected by stale patterns.
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';

/** Outcome of checking a `to` value; `reason` completes "`to` is not a valid E.164 number: ...". */
export type RecipientResult = { ok: true; e164: string } | { ok: false; reason: string };

/** `+`, then digits and visual separators, ending in a digit. */
const SHAPE = /^\+[0-9 ().-]*[0-9]$/;
const SEPARATORS = /[ ().-]/g;

/**
 * Turns what a customer typed into the canonical E.164 form stored and sent to
 * carriers, or explains why it cannot be a reachable number.
 */
export function parseRecipient(input: string): RecipientResult {
  if (input.length === 0) return { ok: false, reason: 'it is empty.' };
  if (input[0] !== '+') return { ok: false, reason: 'it must start with "+" followed by the country calling code (no "00" prefix, no spaces before).' };
  if (!SHAPE.test(input)) {
    return { ok: false, reason: 'after the "+" only digits and the separators space, "-", ".", "(" and ")" are allowed, and it must end with a digit.' };
  }
  const digits = input.slice(1).replace(SEPARATORS, '');
  if (digits.length < 8) return { ok: false, reason: `it has ${digits.length} digits; at least 8 are required.` };
  if (digits.length > 15) return { ok: false, reason: `it has ${digits.length} digits; E.164 allows at most 15.` };
  if (digits[0] === '0') return { ok: false, reason: 'country calling codes never start with 0.' };

  const e164 = `+${digits}`;
  const parsed = parsePhoneNumberFromString(e164);
  if (parsed === undefined) return { ok: false, reason: 'it does not start with a known country calling code.' };
  // libphonenumber silently drops a national (trunk) prefix written after the
  // country code (+44 0 7911... becomes +44 7911...); that is not E.164.
  if (parsed.number !== e164) {
    const hint = parsed.isPossible() ? `; did you mean ${parsed.number}?` : '.';
    return { ok: false, reason: `it contains a national prefix after the country calling code${hint}` };
  }
  if (!parsed.isPossible()) {
    return { ok: false, reason: `its length is not possible for country calling code +${parsed.countryCallingCode}.` };
  }
  return { ok: true, e164 };
}
