/**
 * Rules for alphanumeric Sender ID names, the text a handset shows instead of a
 * phone number. Carriers only carry 11 GSM characters there, and names that
 * impersonate institutions or big brands are the usual smishing vector.
 */

/**
 * Names nobody may register without an operator stepping in. A deliberately
 * short starting point: impersonation targets differ per market, so the
 * operator extends it through configuration. Generic words businesses use
 * honestly (INFO, ALERTS, NEWS...) are left out on purpose.
 */
export const DEFAULT_RESERVED_SENDER_NAMES: readonly string[] = Object.freeze([
  // Government, law enforcement, emergency services
  'GOV', 'GOVT', 'GOVERNMENT', 'POLICE', 'IRS', 'HMRC', 'FBI', 'CIA', 'NHS', 'UN', 'WHO', 'INTERPOL',
  'ARMY', 'NAVY', 'EMERGENCY', 'AMBULANCE', 'FIRE', 'HOSPITAL', 'TAX', 'CUSTOMS',
  // Finance and payments
  'BANK', 'PAYPAL', 'VISA', 'MASTERCARD', 'AMEX',
  // Large platforms
  'GOOGLE', 'APPLE', 'AMAZON', 'MICROSOFT', 'FACEBOOK', 'META', 'WHATSAPP', 'INSTAGRAM', 'NETFLIX',
  'UBER', 'TWITTER', 'TIKTOK',
  // Words that lend false authority to a phishing text
  'VERIFY', 'SECURITY', 'ADMIN', 'SUPPORT',
]);

/** Why a proposed name was refused; the codes match the API error catalogue. */
export type SenderIdNameCheck =
  | { ok: true }
  | { ok: false; code: 'invalid_sender_id_name' | 'sender_id_not_allowed'; reason: string };

const MAX_LENGTH = 11;
const ALLOWED = /^[A-Za-z0-9]+$/;
const WHITESPACE = /\s/;

function invalid(reason: string): SenderIdNameCheck {
  return { ok: false, code: 'invalid_sender_id_name', reason };
}

/**
 * The key Sender IDs are made unique by, so "Acme" and "ACME" cannot both be
 * registered (handsets and customers do not tell them apart).
 */
export function senderNameKey(name: string): string {
  return name.toUpperCase();
}

/**
 * Decides whether a name may be registered: it must be something every
 * carrier can display, and must not be a reserved name (compared
 * case-insensitively against the whole name, so "BANK" is refused but
 * "BANKSY" is not).
 */
export function checkSenderIdName(name: string, reserved: readonly string[]): SenderIdNameCheck {
  if (name.length === 0) return invalid('A Sender ID name must not be empty.');
  if (WHITESPACE.test(name)) return invalid('A Sender ID name must not contain spaces or other whitespace.');
  if (!ALLOWED.test(name)) {
    return invalid('A Sender ID name may contain only the ASCII letters A-Z, a-z and digits 0-9 (no punctuation, symbols or accented letters).');
  }
  if (name.length > MAX_LENGTH) return invalid(`A Sender ID name must be at most ${MAX_LENGTH} characters; this one has ${name.length}.`);
  const key = senderNameKey(name);
  if (reserved.some((entry) => senderNameKey(entry) === key)) {
    return { ok: false, code: 'sender_id_not_allowed', reason: `The Sender ID name ${name} is reserved and cannot be registered.` };
  }
  return { ok: true };
}
