/**
 * `X-Twilio-Signature` (DECISIONS.md §12): base64 of HMAC-SHA1, keyed with the account's Auth
 * Token, over the exact URL followed by every parameter's name and value, sorted by name. It is
 * what the `twilio` package's `validateRequest` recomputes, so a receiver written for Twilio
 * checks Pigeon's requests unchanged.
 */
import { createHmac } from 'node:crypto';

export function twilioSignature(authToken: string, url: string, params: Readonly<Record<string, string>>): string {
  let data = url;
  for (const name of Object.keys(params).sort()) data += name + params[name];
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

/** The form-encoded body of the same parameters. */
export function formBody(params: Readonly<Record<string, string>>): string {
  return new URLSearchParams(Object.entries(params)).toString();
}
