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
import { Metadata } from 'libphonenumber-js/core';
import metadataJson from 'libphonenumber-js/max/metadata';

/** Outcome of checking a `to` value; `reason` completes "`to` is not a valid E.164 number: ...". */
/**
 * A shortcut for the common case, decided from the same metadata: per country calling code, the
 * national number lengths possible in every country that shares the code, and each country's
 * "national prefix for parsing". A number whose national part has such a length and that no
 * country's national prefix rule could rewrite is possible whichever country it belongs to, so
 * libphonenumber's country detection (most of its cost, for shared codes such as +1 and +44) can
 * be skipped. Every other number takes the full path; a test compares both on many random numbers.
 */
interface CallingCodePlan {
  lengths: ReadonlySet<number>;
  prefixRules: readonly RegExp[];
}

function buildPlans(): Map<string, CallingCodePlan> {
  const metadata = new Metadata(metadataJson as never) as unknown as {
    selectNumberingPlan(country: string): void;
    numberingPlan: { possibleLengths(): number[]; nationalPrefixForParsing(): string | undefined | 0 };
  };
  const codes = (metadataJson as unknown as { country_calling_codes: Record<string, string[]> }).country_calling_codes;
  const plans = new Map<string, CallingCodePlan>();
  for (const [code, countries] of Object.entries(codes)) {
    const perCountry: number[][] = [];
    const prefixRules: RegExp[] = [];
    for (const country of countries) {
      metadata.selectNumberingPlan(country);
      perCountry.push(metadata.numberingPlan.possibleLengths());
      const rule = metadata.numberingPlan.nationalPrefixForParsing();
      if (rule) prefixRules.push(new RegExp(`^(?:${rule})`));
    }
    const lengths = new Set((perCountry[0] ?? []).filter((n) => perCountry.every((list) => list.includes(n))));
    plans.set(code, { lengths, prefixRules });
  }
  return plans;
}

let plans: Map<string, CallingCodePlan> | null = null;

/** True only when the number is certainly possible; false means "ask libphonenumber". */
export function surelyPossible(digits: string): boolean {
  plans ??= buildPlans();
  for (let length = 1; length <= 3; length++) {
    const plan = plans.get(digits.slice(0, length));
    if (!plan) continue;
    const national = digits.slice(length);
    if (!plan.lengths.has(national.length)) return false;
    for (const rule of plan.prefixRules) {
      const m = rule.exec(national);
      if (m && m[0].length > 0) return false;
    }
    return true;
  }
  return false;
}

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
  if (surelyPossible(digits)) return { ok: true, e164 };
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
