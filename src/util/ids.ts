import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'; // Crockford base32, lower case

let lastMs = -1;
let sequence = 0;

// Random bytes are drawn from the system in blocks: one call per id costs more than the rest of
// making the id, and ids are made by the tens of thousands per second under load.
const POOL_SIZE = 8192;
let pool = randomBytes(POOL_SIZE);
let poolOffset = 0;

function random(n: number): Buffer {
  if (poolOffset + n > POOL_SIZE) {
    pool = randomBytes(POOL_SIZE);
    poolOffset = 0;
  }
  const out = pool.subarray(poolOffset, poolOffset + n);
  poolOffset += n;
  return out;
}

function base32(value: number, length: number): string {
  let out = '';
  let v = value;
  for (let i = 0; i < length; i++) {
    out = ALPHABET[v % 32] + out;
    v = Math.floor(v / 32);
  }
  return out;
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
    sequence = random(2).readUInt16BE(0) * 8;
  }
  const time = base32(now, 10) + base32(sequence, 4);
  const bytes = random(8);
  let rand = '';
  // 60 of the 64 random bits, as 12 base32 characters.
  let acc = 0;
  let bits = 0;
  for (const b of bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5 && rand.length < 12) {
      bits -= 5;
      rand += ALPHABET[(acc >> bits) & 31];
    }
    acc &= (1 << bits) - 1;
  }
  return `${prefix}_${time}${rand}`;
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
