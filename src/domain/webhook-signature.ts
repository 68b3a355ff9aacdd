/**
 * Webhook signing, so customers can prove a callback came from Pigeon and is
 * fresh. Header format (Stripe-style): `t=<unix seconds>,v1=<hex>[,v1=<hex>...]`
 * where each v1 is HMAC-SHA256 of `<t>.<raw body>`. Several v1 values let a
 * customer rotate secrets without dropping events.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

const DEFAULT_TOLERANCE_SECONDS = 300;
/** Real headers are short; anything longer is refused before parsing. */
const MAX_HEADER_LENGTH = 4096;
const TIMESTAMP = /^[0-9]{1,15}$/;
const SHA256_HEX = /^[0-9a-fA-F]{64}$/;

/** HMAC over the timestamp exactly as written in the header, then a dot, then the body. */
function hmac(rawBody: string, secret: string, timestamp: string): Buffer {
  return createHmac('sha256', secret).update(`${timestamp}.${rawBody}`, 'utf8').digest();
}

function checkTimestamp(unixSeconds: number): void {
  if (!Number.isSafeInteger(unixSeconds) || unixSeconds < 0) {
    throw new RangeError(`unixSeconds must be a non-negative integer, got ${unixSeconds}`);
  }
}

/** Signs one delivery for the `Pigeon-Signature` header (or whatever the caller names it). */
export function signWebhook(rawBody: string, secret: string, unixSeconds: number): string {
  return signWebhookWithSecrets(rawBody, [secret], unixSeconds);
}

/**
 * Signs one delivery with every active secret during a rotation, so receivers
 * holding either the old or the new secret accept it.
 */
export function signWebhookWithSecrets(rawBody: string, secrets: readonly string[], unixSeconds: number): string {
  checkTimestamp(unixSeconds);
  if (secrets.length === 0) throw new RangeError('at least one secret is required to sign a webhook');
  if (secrets.some((secret) => secret.length === 0)) throw new RangeError('webhook secrets must not be empty');
  const t = String(unixSeconds);
  const signatures = secrets.map((secret) => `v1=${hmac(rawBody, secret, t).toString('hex')}`);
  return [`t=${t}`, ...signatures].join(',');
}

/** The header's timestamp and v1 signatures, or null when it is malformed. */
function parseHeader(header: string): { timestamp: string; signatures: Buffer[] } | null {
  if (header.length > MAX_HEADER_LENGTH) return null;
  let timestamp: string | undefined;
  const signatures: Buffer[] = [];
  for (const item of header.split(',')) {
    const eq = item.indexOf('=');
    if (eq < 0) return null;
    const key = item.slice(0, eq).trim();
    const value = item.slice(eq + 1).trim();
    if (key === 't') {
      if (timestamp !== undefined || !TIMESTAMP.test(value)) return null;
      timestamp = value;
    } else if (key === 'v1') {
      // A v1 that is not a SHA-256 hex digest can never match; skip it.
      if (SHA256_HEX.test(value)) signatures.push(Buffer.from(value, 'hex'));
    }
    // Other schemes (v0, v2, ...) are ignored so new ones can be added later.
  }
  if (timestamp === undefined || signatures.length === 0) return null;
  return { timestamp, signatures };
}

/**
 * Checks a received signature header: what customers (and Pigeon's own tests)
 * run on incoming webhooks. Rejects bodies that were altered, signed with
 * another secret, or replayed outside the tolerance window (either side of
 * `nowSeconds`). Never throws: any malformed input is simply not verified.
 */
export function verifyWebhookSignature(
  rawBody: string,
  header: string,
  secret: string,
  opts: { nowSeconds: number; toleranceSeconds?: number },
): boolean {
  if (typeof rawBody !== 'string' || typeof header !== 'string' || typeof secret !== 'string' || secret.length === 0) return false;
  const parsed = parseHeader(header);
  if (parsed === null) return false;
  const tolerance = opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (!Number.isFinite(opts.nowSeconds) || !(tolerance >= 0)) return false;
  if (Math.abs(opts.nowSeconds - Number(parsed.timestamp)) > tolerance) return false;
  const expected = hmac(rawBody, secret, parsed.timestamp);
  let matched = false;
  for (const candidate of parsed.signatures) {
    // Every candidate is compared, in constant time each, so timing reveals nothing about which one matched.
    if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) matched = true;
  }
  return matched;
}
