/**
 * The sender of an inbound message as carriers give it (an SMPP address with its TON and NPI),
 * turned into E.164 where it is a phone number (DECISIONS.md §8): international numbers get their
 * "+", national ones the country of the number they were sent to; short codes and alphanumeric
 * senders stay as they came.
 */
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { parseRecipient } from './phone-number.ts';

/** SMPP type of number values (SMPP 3.4, 5.2.5). */
export const TON = { unknown: 0, international: 1, national: 2, network: 3, subscriber: 4, alphanumeric: 5, abbreviated: 6 } as const;

/** The calling code of one of our numbers (E.164), or undefined for a short code. */
export function callingCodeOfNumber(number: string): string | undefined {
  if (!number.startsWith('+')) return undefined;
  return parsePhoneNumberFromString(number)?.countryCallingCode;
}

export function normaliseSender(address: string, ton: number, ourNumber: string): string {
  const trimmed = address.trim();
  if (ton === TON.alphanumeric || !/^\+?[0-9]+$/.test(trimmed)) return trimmed;
  const digits = trimmed.replace(/^\+/, '');
  if (ton === TON.international || trimmed.startsWith('+')) {
    const parsed = parseRecipient(`+${digits}`);
    return parsed.ok ? parsed.e164 : trimmed;
  }
  if (ton === TON.national || ton === TON.unknown || ton === TON.subscriber) {
    const callingCode = callingCodeOfNumber(ourNumber);
    if (callingCode) {
      const national = parsePhoneNumberFromString(digits, { defaultCallingCode: callingCode });
      if (national?.isPossible()) return national.number;
    }
    // Unknown TON: many SMSCs send international numbers without their "+".
    if (ton === TON.unknown && digits.length >= 8) {
      const parsed = parseRecipient(`+${digits}`);
      if (parsed.ok) return parsed.e164;
    }
  }
  return digits;
}
