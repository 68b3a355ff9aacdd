/**
 * Twilio-style SIDs for Pigeon's own ids (DECISIONS.md §12). A message id is `msg_` and 26
 * Crockford base32 characters (src/util/ids.ts): 130 bits, of which the top two are always zero
 * (the first character is a time digit below `4` until the year 36812), so the id is exactly a
 * 128-bit number, written as 32 hex digits after `SM`. The mapping is computed both ways; nothing
 * is stored, and a message's SID never changes.
 */

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const VALUE = new Map([...ALPHABET].map((c, i) => [c, BigInt(i)]));
const ID_BODY = /^[0-9a-hjkmnp-tv-z]{26}$/;
const LIMIT = 1n << 128n;

/** The 32 hex digits of an id's 26-character body, or null when the id has another shape. */
function hexOfId(id: string, prefix: string): string | null {
  if (!id.startsWith(`${prefix}_`)) return null;
  const body = id.slice(prefix.length + 1);
  if (!ID_BODY.test(body)) return null;
  let n = 0n;
  for (const c of body) n = n * 32n + VALUE.get(c)!;
  if (n >= LIMIT) return null;
  return n.toString(16).padStart(32, '0');
}

/** `SM` and 32 hex digits for a message id (`msg_…`) or an inbound message id (`in_…`); null for another shape. */
export function messageSidOf(id: string): string | null {
  const hex = hexOfId(id, 'msg') ?? hexOfId(id, 'in');
  return hex === null ? null : `SM${hex}`;
}

/** The `msg_` id a message SID stands for, or null when the text is not a message SID. */
export function messageIdOfSid(sid: string): string | null {
  return idOfSid(sid, 'SM', 'msg');
}

/** The Pigeon id (`{prefix}_…`) a SID (`{sidPrefix}` and 32 hex digits) stands for, or null for another shape. */
function idOfSid(sid: string, sidPrefix: string, prefix: string): string | null {
  if (!sid.startsWith(sidPrefix) || !/^[0-9a-f]{32}$/.test(sid.slice(sidPrefix.length)) || sid.length !== sidPrefix.length + 32) return null;
  let n = BigInt(`0x${sid.slice(sidPrefix.length)}`);
  let body = '';
  for (let i = 0; i < 26; i++) {
    body = ALPHABET[Number(n % 32n)] + body;
    n /= 32n;
  }
  return `${prefix}_${body}`;
}

/** Verify's SIDs (DECISIONS.md §14): `VA` for a service (`vsv_…`), `VE` for a verification (`ver_…`), the same records. */
export function serviceSidOf(id: string): string {
  return `VA${hexOfId(id, 'vsv') ?? '0'.repeat(32)}`;
}
export function verificationSidOf(id: string): string {
  return `VE${hexOfId(id, 'ver') ?? '0'.repeat(32)}`;
}
export function serviceIdOfSid(sid: string): string | null {
  return idOfSid(sid, 'VA', 'vsv');
}
export function verificationIdOfSid(sid: string): string | null {
  return idOfSid(sid, 'VE', 'ver');
}

const ACCOUNT_SID = /^AC[0-9a-f]{32}$/;
const AUTH_TOKEN = /^[0-9a-f]{32}$/;

export function isAccountSid(value: string): boolean {
  return ACCOUNT_SID.test(value);
}

export function isAuthToken(value: string): boolean {
  return AUTH_TOKEN.test(value);
}

/** The token as shown after it was first given: its last four digits. */
export function maskAuthToken(token: string): string {
  return `${'*'.repeat(28)}${token.slice(-4)}`;
}
