/**
 * TOTP (RFC 6238) as §15 fixes it: HMAC-SHA-1, 6 digits, 30-second steps, one step either side
 * accepted, through the maintained `otpauth` library (no hand-rolled HMAC or truncation). This
 * module only computes and checks codes; remembering the last step accepted, so that a code is not
 * taken twice, is the caller's (src/services/auth/two-factor.ts).
 */
import { Secret, TOTP, URI } from 'otpauth';

export const TOTP_ISSUER = 'Pigeon';
export const TOTP_DIGITS = 6;
export const TOTP_PERIOD_S = 30;
/** Steps accepted either side of the current one (a clock a little off, a code typed slowly). */
export const TOTP_WINDOW = 1;

function totp(secretBase32: string, label: string, digits = TOTP_DIGITS): TOTP {
  return new TOTP({ issuer: TOTP_ISSUER, label, algorithm: 'SHA1', digits, period: TOTP_PERIOD_S, secret: Secret.fromBase32(secretBase32) });
}

/** A new random secret, base32 (160 bits, the length RFC 4226 recommends for SHA-1). */
export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

/** The otpauth:// URI an authenticator app reads (from the QR code), labelled with the person's e-mail. */
export function totpUri(secretBase32: string, label: string): string {
  return URI.stringify(totp(secretBase32, label));
}

/** The code of the step that holds `atMs` (`digits` other than 6 only for the RFC's test vectors). */
export function totpCodeAt(secretBase32: string, atMs: number, digits = TOTP_DIGITS): string {
  return totp(secretBase32, 'code', digits).generate({ timestamp: atMs });
}

/** The step a valid code belongs to (within one step of `nowMs`), or null when the code is not valid. */
export function totpStepOf(secretBase32: string, code: string, nowMs: number): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const delta = totp(secretBase32, 'code').validate({ token: code, timestamp: nowMs, window: TOTP_WINDOW });
  if (delta === null) return null;
  return Math.floor(nowMs / 1000 / TOTP_PERIOD_S) + delta;
}
