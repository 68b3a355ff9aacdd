/**
 * Phone numbers as people write them in their own country (`07400 123401`, `(415) 555-2671`),
 * read against a default country chosen for a campaign file. A number with a `+` is international
 * and read exactly as the API reads `to` (phone-number.ts), whatever the country. Without one it
 * is parsed by libphonenumber-js as a national number of the country, which also accepts what
 * spreadsheets and exports make of them: the trunk `0` lost when a cell was typed as a number
 * (`7400123401`), the country code without its `+` (`447400123401`), or the international
 * call prefix (`0044 7400 123401`). As for `to`, a number must be possible (the right length for
 * its country), not known to be in service (`isPossible`, never `isValid`).
 */
import { getCountries, getCountryCallingCode, parsePhoneNumberFromString, validatePhoneNumberLength, type CountryCode } from 'libphonenumber-js/max';
import { Metadata } from 'libphonenumber-js/core';
import metadataJson from 'libphonenumber-js/max/metadata';
import { parseRecipient, surelyPossible } from './phone-number.ts';

export interface Country {
  /** ISO 3166-1 alpha-2, as libphonenumber-js names it. */
  code: string;
  name: string;
  callingCode: string;
}

const regionNames = new Intl.DisplayNames(['en'], { type: 'region' });

/** Every country libphonenumber-js knows, by English name. */
export const COUNTRIES: readonly Country[] = getCountries()
  .map((code) => ({ code, name: regionNames.of(code) ?? code, callingCode: getCountryCallingCode(code) }))
  .sort((a, b) => a.name.localeCompare(b.name, 'en'));

const BY_CODE = new Map(COUNTRIES.map((c) => [c.code, c]));

export function countryByCode(code: string | null | undefined): Country | undefined {
  return code ? BY_CODE.get(code.toUpperCase()) : undefined;
}

const MAIN_COUNTRY: ReadonlyMap<string, string> = new Map(
  Object.entries((metadataJson as unknown as { country_calling_codes: Record<string, string[]> }).country_calling_codes).map(([code, countries]) => [code, countries[0]!]),
);

/**
 * The calling codes of a single country (33 → FR, not 44, shared with GG, IM and JE, nor the
 * non-geographic 800): libphonenumber-js names that country for every number it parses under
 * them, without reading the rest of the digits (`getCountryByCallingCode`).
 */
const SOLE_COUNTRY: ReadonlyMap<string, string> = new Map(
  Object.entries((metadataJson as unknown as { country_calling_codes: Record<string, string[]> }).country_calling_codes).flatMap(([code, countries]) =>
    countries.length === 1 && countries[0] !== '001' ? [[code, countries[0]!] as const] : [],
  ),
);

/** `+`, then digits only: an E.164 number as the API stores it. */
const E164_DIGITS = /^\+[1-9][0-9]{3,16}$/;

/**
 * The country of an international number (`+447400123401` → GB): the one its digits belong to, or
 * else the main country of its calling code (a number in a range not yet in the metadata still
 * says where the business is). The answer is libphonenumber-js's own (a property test holds them
 * equal) without its parse, about 13 µs of a verification's create and of each row of a campaign
 * file: under a calling code of one country, that country; under one several share (1, 7, 44...),
 * the first whose leading digits or number patterns the number matches, as the library decides,
 * with the patterns compiled once. A number that starts with the national prefix (+1 1...) is
 * left to the parse, which may strip it.
 */
export function countryOfNumber(e164: string): string | undefined {
  if (E164_DIGITS.test(e164)) {
    // Calling codes are prefix-free (ITU-T E.164): at most one of these is one.
    for (let length = 1; length <= 3; length++) {
      const code = e164.slice(1, 1 + length);
      // libphonenumber-js reads a national number of 2 to 17 digits (MIN/MAX_LENGTH_FOR_NSN).
      if (!MAIN_COUNTRY.has(code) || e164.length - 1 - length < 2) continue;
      const sole = SOLE_COUNTRY.get(code);
      if (sole !== undefined) return sole;
      const shared = sharedCode(code);
      const national = e164.slice(1 + length);
      if (shared !== null && !shared.prefix?.test(national)) return countryAmong(shared, national) ?? MAIN_COUNTRY.get(code);
      break;
    }
  }
  const parsed = parsePhoneNumberFromString(e164);
  return parsed ? (parsed.country ?? MAIN_COUNTRY.get(parsed.countryCallingCode)) : undefined;
}

/** What libphonenumber-js reads of one country under a calling code it shares (`getCountryByNationalNumber`). */
interface SharingCountry {
  country: string;
  /** Its leading digits, where it has them: a number that starts with them is its, and none other is. */
  leading: RegExp | null;
  /** Its national numbers, and the patterns of their types (fixed line, mobile, toll free...). */
  general: RegExp | null;
  types: { pattern: RegExp; lengths: readonly number[] | undefined }[];
}

interface SharedCode {
  /** The main country's national prefix for parsing: a number that starts with it is left to the parse. */
  prefix: RegExp | null;
  countries: SharingCountry[];
}

/** The types `getNumberType` tries, in its order (any of them makes a number the country's). */
const NUMBER_TYPES = ['FIXED_LINE', 'MOBILE', 'PREMIUM_RATE', 'TOLL_FREE', 'SHARED_COST', 'VOIP', 'PERSONAL_NUMBER', 'PAGER', 'UAN', 'VOICEMAIL'] as const;

const sharedCodes = new Map<string, SharedCode | null>();

/**
 * The countries of a calling code several share (1: US, AG, ..., CA, ...), with their patterns
 * compiled once; libphonenumber-js compiles them again on each number (`matchesEntirely`). Null
 * where the metadata's shape is not the one this reads (the parse answers then).
 */
function sharedCode(code: string): SharedCode | null {
  if (sharedCodes.has(code)) return sharedCodes.get(code)!;
  const countries = (metadataJson as unknown as { country_calling_codes: Record<string, string[]> }).country_calling_codes[code] ?? [];
  let shared: SharedCode | null = null;
  if (countries.length > 1 && !countries.includes('001')) {
    const m = new Metadata(metadataJson as never) as unknown as {
      selectNumberingPlan(country: string): void;
      nationalPrefixForParsing(): string | undefined;
      leadingDigits(): string | undefined;
      nationalNumberPattern(): string | undefined;
      type(type: string): { pattern(): string; possibleLengths(): number[] | undefined } | undefined;
    };
    const whole = (pattern: string) => new RegExp(`^(?:${pattern})$`);
    m.selectNumberingPlan(code);
    const prefix = m.nationalPrefixForParsing();
    shared = {
      prefix: prefix ? new RegExp(`^(?:${prefix})`) : null,
      countries: countries.map((country) => {
        m.selectNumberingPlan(country);
        const leading = m.leadingDigits();
        const general = m.nationalNumberPattern();
        return {
          country,
          leading: leading ? new RegExp(`^(?:${leading})`) : null,
          general: general ? whole(general) : null,
          types: NUMBER_TYPES.flatMap((name) => {
            const type = m.type(name);
            return type && type.pattern() ? [{ pattern: whole(type.pattern()), lengths: type.possibleLengths() }] : [];
          }),
        };
      }),
    };
  }
  sharedCodes.set(code, shared);
  return shared;
}

/** The first country whose leading digits start the number, or (without any) one of whose types it is. */
function countryAmong(shared: SharedCode, national: string): string | undefined {
  for (const c of shared.countries) {
    if (c.leading) {
      if (c.leading.test(national)) return c.country;
    } else if (c.general?.test(national) && c.types.some((t) => (t.lengths === undefined || t.lengths.includes(national.length)) && t.pattern.test(national))) {
      return c.country;
    }
  }
  return undefined;
}

/**
 * What a shortcut needs of a country's numbering plan: its calling code, its national (trunk)
 * prefix, the rule that finds that prefix when parsing, whether the rule rewrites what follows,
 * and the international call prefix.
 */
interface NationalPlan {
  callingCode: string;
  prefix: string | null;
  rule: RegExp | null;
  rewrites: boolean;
  idd: RegExp | null;
  /** The country's national numbers, whole: one that matches keeps what looks like its prefix. */
  pattern: RegExp;
}

const nationalPlans = new Map<string, NationalPlan>();
let planMetadata: { selectNumberingPlan(country: string): void; numberingPlan: Record<string, () => string | 0 | undefined> } | null = null;

function nationalPlan(country: string): NationalPlan {
  let plan = nationalPlans.get(country);
  if (plan) return plan;
  planMetadata ??= new Metadata(metadataJson as never) as never;
  planMetadata!.selectNumberingPlan(country);
  const p = planMetadata!.numberingPlan;
  const rule = p.nationalPrefixForParsing!();
  const idd = p.IDDPrefix!();
  plan = {
    callingCode: String(p.callingCode!()),
    prefix: p.nationalPrefix!() || null,
    rule: rule ? new RegExp(`^(?:${rule})`) : null,
    rewrites: Boolean(p.nationalPrefixTransformRule!()),
    idd: idd ? new RegExp(`^(?:${idd})`) : null,
    pattern: new RegExp(`^(?:${String(p.nationalNumberPattern!())})$`),
  };
  nationalPlans.set(country, plan);
  return plan;
}

/**
 * The common case without libphonenumber's parse (about 20 µs a number: 2 s of a 100,000-row
 * file): the country's national prefix, if any, then a national number that no country of the
 * calling code could read otherwise (`surelyPossible`). The prefix is dropped only where the
 * digits whole are not a national number of the country (libphonenumber-js keeps it then).
 * Anything else (an international call prefix, the calling code written first, a rule that
 * rewrites the number, a length that needs the country decided) returns undefined, for the full
 * parse. A test compares both on many random numbers.
 */
export function nationalShortcut(digits: string, country: string): string | undefined {
  const plan = nationalPlan(country);
  if (plan.rewrites || plan.idd?.test(digits) || digits.startsWith(plan.callingCode)) return undefined;
  let national = digits;
  const m = plan.rule?.exec(digits);
  if (m && m[0].length > 0) {
    if (m[0] !== plan.prefix || m.slice(1).some((g) => g !== undefined) || plan.pattern.test(digits)) return undefined;
    national = digits.slice(m[0].length);
  }
  const all = plan.callingCode + national;
  return national.length > 0 && surelyPossible(all) ? `+${all}` : undefined;
}

export type PhoneReading = { ok: true; e164: string; national: boolean } | { ok: false; reason: string; national: boolean };

/** What people write in a phone number beside its digits: a `+` or `00` first, spaces, `-`, `.`, `/`, brackets. */
const WRITTEN = /^[0-9 ()./-]+$/;

/**
 * Reads `input` (already trimmed) as a recipient: international when it starts with `+`, else a
 * national number of `country` (an alpha-2 code; none means every number needs its `+`).
 */
export function readPhoneNumber(input: string, country: string | null | undefined): PhoneReading {
  const known = countryByCode(country);
  if (input.startsWith('+') || !known) {
    const international = parseRecipient(input);
    return international.ok ? { ok: true, e164: international.e164, national: false } : { ok: false, reason: international.reason, national: false };
  }
  const where = `a number of ${known.name} (+${known.callingCode})`;
  // Not written as a number at all: refused in the words used for `to` in any file.
  if (!WRITTEN.test(input) || !/[0-9]/.test(input)) return { ok: false, reason: 'it is not a phone number (only digits, spaces and - . / ( ) are read, or a "+" and the country code).', national: false };
  const shortcut = nationalShortcut(input.replace(/[ ()./-]/g, ''), known.code);
  if (shortcut) {
    const international = parseRecipient(shortcut);
    if (international.ok) return { ok: true, e164: international.e164, national: true };
  }
  const code = known.code as CountryCode;
  const parsed = parsePhoneNumberFromString(input, code);
  if (!parsed || !parsed.isPossible()) {
    const length = validatePhoneNumberLength(input, code);
    const why = length === 'TOO_SHORT' ? 'it is too short' : length === 'TOO_LONG' ? 'it is too long' : 'its length is not possible there';
    return { ok: false, reason: `It cannot be read as ${where}: ${why}. A number of another country needs its “+” and country code.`, national: true };
  }
  // The number libphonenumber made is E.164; it must also pass the API's own reading of `to`.
  const international = parseRecipient(parsed.number);
  return international.ok ? { ok: true, e164: international.e164, national: true } : { ok: false, reason: `It cannot be read as ${where}: ${international.reason}`, national: true };
}
