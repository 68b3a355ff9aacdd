/**
 * The time zone(s) a phone number may be in, for quiet hours (DECISIONS.md §16): for +1 by its
 * area code (nanp-area-codes.ts, shipped with Pigeon), otherwise by its country (libphonenumber's
 * metadata gives the country, the platform's Intl its zones). A number whose country has several
 * zones may be in any of them, so all are returned and the window must hold in all.
 */
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import metadataJson from 'libphonenumber-js/max/metadata';
import { NANP_AREA_CODE_ZONES } from './nanp-area-codes.ts';

const COUNTRIES_OF_CODE = (metadataJson as unknown as { country_calling_codes: Record<string, string[]> }).country_calling_codes;

const countryZones = new Map<string, readonly string[]>();

/** The IANA zones of a country (ISO 3166 alpha-2), from Intl's region data; none if it knows none. */
export function zonesOfCountry(country: string): readonly string[] {
  let zones = countryZones.get(country);
  if (!zones) {
    let found: string[] = [];
    try {
      const locale = new Intl.Locale(`und-${country}`) as Intl.Locale & { timeZones?: string[]; getTimeZones?: () => string[] };
      found = locale.getTimeZones?.() ?? locale.timeZones ?? [];
    } catch {
      found = [];
    }
    zones = [...new Set(found)].sort();
    countryZones.set(country, zones);
  }
  return zones;
}

/**
 * The zones `e164` (normalised, `+` and digits) may be in; empty when nothing is known of it (no
 * known country), in which case no window can be checked and the caller treats it as UTC.
 */
export function zonesOfNumber(e164: string): readonly string[] {
  if (e164.startsWith('+1') && e164.length === 12) {
    const zones = NANP_AREA_CODE_ZONES.get(e164.slice(2, 5));
    if (zones) return zones;
  }
  const parsed = parsePhoneNumberFromString(e164);
  if (parsed?.country) {
    const zones = zonesOfCountry(parsed.country);
    if (zones.length > 0) return zones;
  }
  // The country is not told by the number (a non-geographic +1 code, a shared calling code): every
  // country of its calling code.
  const code = parsed?.countryCallingCode;
  if (!code) return [];
  return [...new Set((COUNTRIES_OF_CODE[code] ?? []).flatMap((c) => zonesOfCountry(c)))].sort();
}
