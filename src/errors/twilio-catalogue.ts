/**
 * The errors of the Twilio-compatible API (DECISIONS.md §12), answered as Twilio does:
 * `{"code","message","more_info","status"}` with Twilio's numeric codes. Services throw the
 * catalogue's `AppError`s, which `twilioErrorFor` maps, or a `TwilioError` for a refusal that
 * only this API has (a Twilio parameter missing or unsupported). The guide "Moving from Twilio"
 * lists every code here (test/docs checks it).
 */
import { catalogue, type AppError, type ErrorCode } from './catalogue.ts';

export interface TwilioErrorSpec {
  readonly status: number;
  readonly message: string;
}

export const twilioCatalogue = {
  20001: { status: 400, message: 'A parameter is invalid or not supported.' },
  20003: { status: 401, message: 'Authentication failed: the Account SID with its Auth Token, or with an API key of that account.' },
  20004: { status: 405, message: 'Method not allowed.' },
  20005: { status: 400, message: 'The account has too few credits for this message.' },
  20009: { status: 400, message: 'Only a message in a final state (delivered, undelivered, failed, canceled) can be deleted.' },
  20403: { status: 403, message: 'The credentials may not do this (the API key lacks the scope, or the account is suspended).' },
  20404: { status: 404, message: 'The requested resource was not found.' },
  20429: { status: 429, message: 'Too many requests.' },
  20500: { status: 500, message: 'Internal error.' },
  20503: { status: 503, message: 'The service is unavailable; retry later.' },
  21211: { status: 400, message: "The 'To' number is not a valid phone number." },
  21602: { status: 400, message: 'A message body is required.' },
  21603: { status: 400, message: "A 'From' phone number or Sender ID is required." },
  21604: { status: 400, message: "A 'To' phone number is required." },
  21606: { status: 400, message: "The 'From' is not an approved Sender ID or number of this account." },
  21609: { status: 400, message: "The 'StatusCallback' is not an absolute https:// URL." },
  21610: { status: 400, message: 'The recipient opted out of messages from this account.' },
  21612: { status: 400, message: "The 'To' destination is not allowed for this account or not priced." },
  21617: { status: 400, message: 'The message body exceeds 1,600 characters.' },
  21620: { status: 400, message: 'Media (MediaUrl) is not supported: Pigeon sends SMS text only.' },
  21701: { status: 400, message: 'Messaging Services are not supported: name the sender in From.' },
  30409: { status: 400, message: 'Only a scheduled message can be canceled.' },
  35111: { status: 400, message: "SendAt needs ScheduleType 'fixed'." },
  35114: { status: 400, message: 'SendAt is not a time this message can be scheduled for.' },
  60200: { status: 400, message: 'A Verify parameter is invalid or not supported.' },
  60202: { status: 429, message: 'Max check attempts reached: the verification takes no more checks.' },
  60203: { status: 429, message: 'Max send attempts reached: the code was sent as many times as the service allows.' },
  60410: { status: 403, message: 'The fraud guard blocks codes to this number range; nothing was sent or charged.' },
  60605: { status: 403, message: 'The service does not send codes to this country.' },
} as const satisfies Record<number, TwilioErrorSpec>;

export type TwilioCode = keyof typeof twilioCatalogue;

/** A refusal only the Twilio-compatible API makes. */
export class TwilioError extends Error {
  readonly code: TwilioCode;
  readonly headers?: Record<string, string>;
  constructor(code: TwilioCode, message?: string) {
    super(message ?? twilioCatalogue[code].message);
    this.name = 'TwilioError';
    this.code = code;
  }
  get status(): number {
    return twilioCatalogue[this.code].status;
  }
}

/** On Twilio's Verify v2 surface, Pigeon's codes whose Verify code differs from the Messages one. */
const VERIFY_FROM_PIGEON: Partial<Record<ErrorCode, TwilioCode>> = {
  invalid_recipient: 60200,
  invalid_request: 60200,
  verify_max_sends: 60203,
  verify_blocked_fraud: 60410,
  verify_country_blocked: 60605,
};

/** Pigeon's codes that have a Twilio code of their own. */
const FROM_PIGEON: Partial<Record<ErrorCode, TwilioCode>> = {
  invalid_api_key: 20003,
  api_key_revoked: 20003,
  unauthorized: 20003,
  insufficient_permissions: 20403,
  account_suspended: 20403,
  not_found: 20404,
  method_not_allowed: 20004,
  rate_limit_exceeded: 20429,
  daily_limit_reached: 20429,
  invalid_recipient: 21211,
  invalid_sender_id: 21606,
  invalid_message: 21617,
  invalid_callback_url: 21609,
  recipient_opted_out: 21610,
  destination_not_allowed: 21612,
  insufficient_credits: 20005,
  not_cancelable: 30409,
  invalid_send_at: 35114,
  service_unavailable: 20503,
  storage_full: 20503,
  internal_error: 20500,
};

/** A Pigeon code without one: the generic Twilio code of its HTTP status. */
function genericCode(status: number): TwilioCode {
  if (status === 401) return 20003;
  if (status === 403) return 20403;
  if (status === 404) return 20404;
  if (status === 405) return 20004;
  if (status === 429) return 20429;
  if (status === 503) return 20503;
  if (status >= 500) return 20500;
  return 20001;
}

/** The Twilio code, HTTP status and message an error of Pigeon's catalogue answers with. */
export function twilioErrorFor(error: AppError): { code: TwilioCode; status: number; message: string } {
  const mapped = FROM_PIGEON[error.code];
  if (mapped !== undefined) return { code: mapped, status: twilioCatalogue[mapped].status, message: error.message };
  const status = catalogue[error.code].status;
  return { code: genericCode(status), status, message: error.message };
}

/** As `twilioErrorFor`, on the Verify v2 surface (DECISIONS.md §14). */
export function twilioVerifyErrorFor(error: AppError): { code: TwilioCode; status: number; message: string } {
  const mapped = VERIFY_FROM_PIGEON[error.code];
  if (mapped !== undefined) return { code: mapped, status: twilioCatalogue[mapped].status, message: error.message };
  return twilioErrorFor(error);
}

/** Every Pigeon code that maps to a Twilio code of its own, for the docs. */
export function pigeonCodesOf(code: TwilioCode): ErrorCode[] {
  return (Object.keys(FROM_PIGEON) as ErrorCode[]).filter((c) => FROM_PIGEON[c] === code);
}
