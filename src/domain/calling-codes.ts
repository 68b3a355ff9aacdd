/**
 * Country calling codes (ITU-T E.164), for the destination allowlist: `ALLOWED_COUNTRIES` and an
 * account's own list name codes such as `44` or `1`. Codes form a prefix-free set (no code starts
 * another), so a normalised number belongs to the one known code it starts with. `1` is the whole
 * North American Numbering Plan (the US, Canada and the Caribbean) and `7` Russia and Kazakhstan:
 * calling codes cannot tell those countries apart.
 */
import metadataJson from 'libphonenumber-js/max/metadata';

const KNOWN: ReadonlySet<string> = new Set(Object.keys((metadataJson as unknown as { country_calling_codes: Record<string, string[]> }).country_calling_codes));

/** The calling code a normalised E.164 number (`+4479...`) starts with, or null if none is known. */
export function callingCodeOf(e164: string): string | null {
  for (let length = 1; length <= 3; length++) {
    const code = e164.slice(1, 1 + length);
    if (KNOWN.has(code)) return code;
  }
  return null;
}

export type CallingCodeList = { ok: true; codes: string[] } | { ok: false; reason: string };

/**
 * Reads a comma-separated list of calling codes (`44,33`, `+44, +33`): each must be a known code;
 * duplicates are dropped and the list is sorted. An empty list is refused: "no country" is not a
 * useful setting and is more likely a typo than a wish.
 */
export function parseCallingCodes(raw: string): CallingCodeList {
  const parts = raw.split(',').map((s) => s.trim().replace(/^\+/, ''));
  if (parts.every((p) => p === '')) return { ok: false, reason: 'the list is empty.' };
  const codes = new Set<string>();
  for (const part of parts) {
    if (part === '') continue;
    if (!/^\d{1,3}$/.test(part) || !KNOWN.has(part)) return { ok: false, reason: `${JSON.stringify(part)} is not a country calling code.` };
    codes.add(part);
  }
  return { ok: true, codes: [...codes].sort((a, b) => Number(a) - Number(b)) };
}
