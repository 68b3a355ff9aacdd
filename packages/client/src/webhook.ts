/**
 * Verification of incoming webhook requests, with Web Crypto only, so it runs wherever `fetch`
 * does. The scheme matches the server's (src/domain/webhook-signature.ts):
 * `X-Pigeon-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`, with one `v1`
 * per active secret while a secret is being rotated.
 */
import { PigeonWebhookError } from './errors.ts';
import type { AccountEvent, WebhookEvent } from './types.ts';

/** Request headers as Node (`IncomingHttpHeaders`), fetch (`Headers`) or a plain object give them. */
export type HeaderSource = Headers | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** How far the signature's time may be from now, either way. Default 300 s. */
  toleranceSeconds?: number;
  /** Now, in unix seconds; default the system clock. */
  nowSeconds?: number;
}

const encoder = new TextEncoder();

function headerValue(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value.join(',') : value;
  }
  return undefined;
}

async function hmacHex(secret: string, data: string): Promise<string> {
  const key = await crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, encoder.encode(data)));
  return Array.from(mac, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** Compares in time independent of where the strings differ. */
function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

const EVENTS = new Set(['sms.sent', 'sms.delivered', 'sms.failed']);
const isNullableString = (v: unknown) => v === null || typeof v === 'string';

function checkEvent(value: unknown): value is WebhookEvent {
  const e = value as Record<string, unknown> | null;
  return (
    typeof e === 'object' &&
    e !== null &&
    typeof e.event === 'string' &&
    EVENTS.has(e.event) &&
    typeof e.message_id === 'string' &&
    isNullableString(e.batch_id) &&
    typeof e.to === 'string' &&
    typeof e.from === 'string' &&
    typeof e.status === 'string' &&
    isNullableString(e.delivered_at) &&
    isNullableString(e.sent_at) &&
    typeof e.timestamp === 'string'
  );
}

/**
 * Checks that a webhook request came from Pigeon, unaltered and recently, and returns its typed
 * event. Pass the raw body exactly as received (before JSON parsing) and the account's webhook
 * secret (or, while rotating, several). Throws {@link PigeonWebhookError} otherwise: answer 401
 * for a signature problem and 400 for `invalid_payload`.
 */
export async function verifyWebhook(
  rawBody: string | Uint8Array,
  headers: HeaderSource,
  secret: string | readonly string[],
  options: VerifyOptions = {},
): Promise<WebhookEvent> {
  const body = typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody);
  const header = headerValue(headers, 'x-pigeon-signature');
  if (!header) throw new PigeonWebhookError('missing_signature', 'No X-Pigeon-Signature header.');
  let timestamp: string | undefined;
  const signatures: string[] = [];
  for (const item of header.split(',')) {
    const eq = item.indexOf('=');
    const key = item.slice(0, eq).trim();
    const value = item.slice(eq + 1).trim().toLowerCase();
    if (eq < 0) continue;
    if (key === 't' && /^\d{1,15}$/.test(value)) timestamp = value;
    else if (key === 'v1' && /^[0-9a-f]{64}$/.test(value)) signatures.push(value);
  }
  if (timestamp === undefined || signatures.length === 0) {
    throw new PigeonWebhookError('invalid_signature', 'X-Pigeon-Signature has no t= or no v1= value.');
  }
  const secrets = (typeof secret === 'string' ? [secret] : [...secret]).filter((s) => s.length > 0);
  if (secrets.length === 0) throw new TypeError('verifyWebhook needs the webhook secret');

  let matched = false;
  for (const s of secrets) {
    const expected = await hmacHex(s, `${timestamp}.${body}`);
    for (const candidate of signatures) if (constantTimeEqual(candidate, expected)) matched = true;
  }
  if (!matched) throw new PigeonWebhookError('invalid_signature', 'The signature does not match the body and secret.');

  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  const tolerance = options.toleranceSeconds ?? 300;
  if (Math.abs(now - Number(timestamp)) > tolerance) {
    throw new PigeonWebhookError('timestamp_out_of_tolerance', `The signature is from ${timestamp}, more than ${tolerance} s from now; a replay?`);
  }

  let event: unknown;
  try {
    event = JSON.parse(body);
  } catch {
    throw new PigeonWebhookError('invalid_payload', 'The body is not JSON.');
  }
  if (!checkEvent(event)) throw new PigeonWebhookError('invalid_payload', 'The body is not a Pigeon webhook event.');
  return event;
}

function checkAccountEvent(value: unknown): value is AccountEvent {
  const e = value as Record<string, unknown> | null;
  if (typeof e !== 'object' || e === null || typeof e.timestamp !== 'string') return false;
  const data = e.data as Record<string, unknown> | null;
  if (typeof data !== 'object' || data === null) return false;
  if (e.event === 'sms.received') {
    return typeof data.id === 'string' && typeof data.from === 'string' && typeof data.to === 'string' && typeof data.message === 'string';
  }
  if (e.event === 'recipient.opted_out' || e.event === 'recipient.opted_in') {
    return typeof data.phone === 'string' && isNullableString(data.number) && typeof data.source === 'string';
  }
  return false;
}

/**
 * {@link verifyWebhook} for the events POSTed to the account's events URL: checks the signature
 * the same way and returns the typed {@link AccountEvent} (`sms.received`, `recipient.opted_out`,
 * `recipient.opted_in`); switch on `event.event` to handle each.
 */
export async function verifyAccountEvent(
  rawBody: string | Uint8Array,
  headers: HeaderSource,
  secret: string | readonly string[],
  options: VerifyOptions = {},
): Promise<AccountEvent> {
  const body = typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody);
  // The signature and its age, exactly as for delivery events; only the body's shape differs.
  try {
    await verifyWebhook(body, headers, secret, options);
  } catch (error) {
    if (!(error instanceof PigeonWebhookError) || error.reason !== 'invalid_payload') throw error;
  }
  let event: unknown;
  try {
    event = JSON.parse(body);
  } catch {
    throw new PigeonWebhookError('invalid_payload', 'The body is not JSON.');
  }
  if (!checkAccountEvent(event)) throw new PigeonWebhookError('invalid_payload', 'The body is not a Pigeon account event.');
  return event;
}
