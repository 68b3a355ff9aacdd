import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'; // Crockford base32, lower case

let lastMs = -1;
let sequence = 0;

// Random bytes are drawn from the system in blocks: one call per id costs more than the rest of
// making the id, and ids are made by the tens of thousands per second under load.
const POOL_SIZE = 8192;
let pool = randomBytes(POOL_SIZE);
let poolOffset = 0;

/** Where `n` fresh random bytes start in `pool`. */
function take(n: number): number {
  if (poolOffset + n > POOL_SIZE) {
    pool = randomBytes(POOL_SIZE);
    poolOffset = 0;
  }
  const at = poolOffset;
  poolOffset += n;
  return at;
}

const CODES = Buffer.from(ALPHABET, 'latin1');
/** The 26 characters after the prefix, written in place: one string is made per id, not one per character. */
const chars = Buffer.alloc(26);

function base32Into(value: number, from: number, length: number): void {
  let v = value;
  for (let i = from + length - 1; i >= from; i--) {
    chars[i] = CODES[v % 32]!;
    v = Math.floor(v / 32);
  }
}

/**
 * A new identifier such as `msg_01jd3k...`: 10 characters of millisecond time, 4 of a sequence
 * that counts up within the millisecond, then 12 random ones (60 bits). Ids made later in a
 * process sort after earlier ones, which keeps primary-key inserts at the end of the index and
 * makes "newest first, ties by id" follow the order of creation.
 */
export function newId(prefix: string, now: number = Date.now()): string {
  if (now === lastMs && sequence < 32 ** 4 - 1) {
    sequence++;
  } else {
    lastMs = now;
    // A random start in the lower half leaves room to count up, and keeps two processes apart.
    const at = take(2);
    sequence = ((pool[at]! << 8) | pool[at + 1]!) * 8;
  }
  base32Into(now, 0, 10);
  base32Into(sequence, 10, 4);
  const at = take(8);
  // 60 of the 64 random bits, as 12 base32 characters.
  let acc = 0;
  let bits = 0;
  let k = 14;
  for (let j = 0; j < 8; j++) {
    acc = (acc << 8) | pool[at + j]!;
    bits += 8;
    while (bits >= 5 && k < 26) {
      bits -= 5;
      chars[k++] = CODES[(acc >> bits) & 31]!;
    }
    acc &= (1 << bits) - 1;
  }
  return `${prefix}_${chars.toString('latin1', 0, 26)}`;
}

/** Milliseconds since the epoch; injected so that tests can move time. */
export type Clock = () => number;
export const systemClock: Clock = () => Date.now();

const TWO_DIGITS = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0'));
const DAY_MS = 86_400_000;
/** The last day formatted, `YYYY-MM-DDT`: the timestamps of one page mostly share it. */
let isoDay = Number.NaN;
let isoDayPrefix = '';
/** Up to the year 9999, where toISOString keeps its four-digit form. */
const MAX_FOUR_DIGIT_YEAR_MS = 253_402_300_799_999;

/**
 * `new Date(ms).toISOString()` without a Date per call: a page of 50 delivery reports formats 150
 * timestamps, and Date's formatting was the largest single cost of serving it.
 */
export function iso(ms: number): string;
export function iso(ms: number | null): string | null;
export function iso(ms: number | null): string | null {
  if (ms === null) return null;
  if (!Number.isInteger(ms) || ms < 0 || ms > MAX_FOUR_DIGIT_YEAR_MS) return new Date(ms).toISOString();
  const inDay = ms % DAY_MS;
  const day = ms - inDay;
  if (day !== isoDay) {
    isoDay = day;
    isoDayPrefix = new Date(day).toISOString().slice(0, 11);
  }
  const millis = inDay % 1000;
  const seconds = (inDay - millis) / 1000;
  return `${isoDayPrefix}${TWO_DIGITS[Math.floor(seconds / 3600)]}:${TWO_DIGITS[Math.floor(seconds / 60) % 60]}:${TWO_DIGITS[seconds % 60]}.${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z`;
}
