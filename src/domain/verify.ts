/**
 * The pure parts of Verify (DECISIONS.md §14): codes, their HMAC, the masked text, number ranges
 * and the fraud guard's rules. Codes come from node's CSPRNG (`crypto.randomInt`, uniform over
 * 0-9, no modulo bias) and are compared as HMACs with `crypto.timingSafeEqual`.
 */
import { createHmac, randomInt, timingSafeEqual, type KeyObject } from 'node:crypto';

export const DEFAULT_TEMPLATE = 'Your {name} code is {code}';
/** What stands for each digit of the code wherever Pigeon shows or stores the text. */
export const MASK_CHARACTER = '•';

export function generateCode(length: number): string {
  // One unbiased draw over the 10^length codes (at most 10^10, within randomInt's 2^48), zero-padded.
  return String(randomInt(10 ** length)).padStart(length, '0');
}

/**
 * The stored form of a code: HMAC-SHA256 under the installation's key of the verification id and
 * the code, so one code's hash says nothing about another verification's, and a stolen table
 * cannot be brute-forced offline without the key. The key is best given as a KeyObject, made once:
 * a Buffer is made into one at every call.
 */
export function codeHash(key: KeyObject | Buffer, verificationId: string, code: string): string {
  return createHmac('sha256', key).update(`${verificationId}:${code}`).digest('hex');
}

export function codeMatches(key: KeyObject | Buffer, verificationId: string, code: string, stored: string): boolean {
  const given = Buffer.from(codeHash(key, verificationId, code), 'hex');
  const expected = Buffer.from(stored, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export function renderTemplate(template: string, name: string, code: string): string {
  return template.replaceAll('{name}', name).replaceAll('{code}', code);
}

/** The text as Pigeon keeps it: the code replaced by as many mask characters. */
export function maskedText(template: string, name: string, codeLength: number): string {
  return renderTemplate(template, name, MASK_CHARACTER.repeat(codeLength));
}

/** The number range of an E.164 number: the number without its last 3 digits. */
export function rangeOf(e164: string): string {
  return e164.slice(0, -3);
}

/** Whether a safe-list entry (a number, or a prefix of numbers) covers the number. */
export function safeListCovers(entries: readonly string[], e164: string): boolean {
  return entries.some((entry) => e164.startsWith(entry));
}

export const VELOCITY_WINDOW_MS = 3_600_000;
export const MAX_PER_NUMBER_PER_HOUR = 5;
export const MAX_PER_RANGE_PER_HOUR = 30;
export const CONVERSION_WINDOW_MS = 24 * 3_600_000;
export const CONVERSION_MIN_SENT = 10;
export const RESEND_GAP_MS = 30_000;
const BASE_BLOCK_MS = 12 * 3_600_000;

/** The conversion rule: a range with 10 or more sent and fewer than 20 % approved is blocked. */
export function conversionBlocks(sent: number, approved: number): boolean {
  return sent >= CONVERSION_MIN_SENT && approved * 5 < sent;
}

/** How long the block at this level (0 for a range's first) lasts: 12 h, 24 h, 48 h … */
export function blockDurationMs(level: number): number {
  return BASE_BLOCK_MS * 2 ** Math.min(level, 10);
}

/**
 * Seconds until the oldest of the window's creations leaves it, which frees one slot: the
 * `Retry-After` of a velocity refusal.
 */
export function retryAfterSeconds(oldestInWindow: number, windowMs: number, now: number): number {
  return Math.max(1, Math.ceil((oldestInWindow + windowMs - now) / 1000));
}
