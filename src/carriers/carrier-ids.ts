/**
 * SMSCs disagree with themselves about message ids: `submit_sm_resp` may give `0A1B2C` while the
 * receipt says `662316` (the same number in decimal), or pads it with zeros. Each id is stored
 * under two keys so that any of these spellings finds it, and an exact spelling wins over a
 * converted one (with sequential decimal ids, `16` must find message 16, not message `10` hex).
 */

export interface CarrierIdKeys {
  /** Lower-cased, leading zeros removed. */
  key: string;
  /** The decimal value of `key` read as hexadecimal, when that differs from `key`; else null. */
  alt: string | null;
}

export function carrierIdKeys(raw: string): CarrierIdKeys {
  const trimmed = raw.trim().toLowerCase();
  const key = trimmed.replace(/^0+(?=.)/, '');
  let alt: string | null = null;
  if (/^[0-9a-f]{1,40}$/.test(key)) {
    const value = BigInt(`0x${key}`).toString(10);
    if (value !== key) alt = value;
  }
  return { key, alt };
}

/**
 * How well a stored part id matches a receipt's id: 0 exact, 1 the receipt wrote the stored hex
 * id in decimal, 2 the receipt wrote the stored decimal id in hex; null when they differ.
 */
export function matchRank(stored: CarrierIdKeys, receipt: CarrierIdKeys): number | null {
  if (stored.key === receipt.key) return 0;
  if (stored.alt !== null && stored.alt === receipt.key) return 1;
  if (receipt.alt !== null && stored.key === receipt.alt) return 2;
  return null;
}

/**
 * How a route's SMSC spells ids in its receipts: as it answered the submit, or converted to the
 * other base (`hex_as_decimal`: answers in hex, receipts in decimal; match rank 1; and the reverse,
 * rank 2). Learned from receipts and stored per route.
 */
export type ReceiptIdSpelling = 'same' | 'hex_as_decimal' | 'decimal_as_hex';

export const SPELLING_OF_RANK: Record<1 | 2, ReceiptIdSpelling> = { 1: 'hex_as_decimal', 2: 'decimal_as_hex' };

/** The match rank a route known to convert ids produces (null for `same`). */
export function rankOfSpelling(spelling: ReceiptIdSpelling | undefined): 1 | 2 | null {
  return spelling === 'hex_as_decimal' ? 1 : spelling === 'decimal_as_hex' ? 2 : null;
}
