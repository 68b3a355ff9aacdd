/**
 * Typed exceptions. Every failure the API answers becomes a {@link PigeonApiError} (or one of its
 * subclasses) carrying the answer's `code`, `status` and `docs_url`; failures to get an answer at
 * all are {@link PigeonConnectionError}.
 */

/** The codes the server's error catalogue defines (see /docs/errors); others may be added later. */
export const KNOWN_ERROR_CODES = [
  'invalid_request',
  'invalid_recipient',
  'invalid_sender_id',
  'invalid_message',
  'invalid_callback_url',
  'invalid_sender_id_name',
  'sender_id_not_allowed',
  'sender_id_exists',
  'too_many_messages',
  'invalid_send_at',
  'invalid_validity_period',
  'not_cancelable',
  'invalid_api_key',
  'api_key_revoked',
  'unauthorized',
  'insufficient_permissions',
  'account_suspended',
  'insufficient_credits',
  'idempotency_in_progress',
  'idempotency_key_reused',
  'webhook_event_not_found',
  'webhook_event_not_undelivered',
  'not_found',
  'method_not_allowed',
  'payload_too_large',
  'unsupported_media_type',
  'rate_limit_exceeded',
  'internal_error',
  'service_unavailable',
  'invalid_events_url',
  'recipient_opted_out',
  'destination_not_allowed',
  'destination_not_priced',
  'opt_out_by_recipient',
  'invalid_number',
  'number_taken',
  'verify_max_sends',
  'verify_country_blocked',
  'verify_blocked_fraud',
] as const;

export type KnownErrorCode = (typeof KNOWN_ERROR_CODES)[number];
/** A known code, or a newer one this version of the client does not list. */
export type PigeonErrorCode = KnownErrorCode | (string & {});

export interface ErrorDetail {
  field: string;
  code: string;
  message: string;
}

/** Base class of everything this package throws. */
export class PigeonError extends Error {
  override name = 'PigeonError';
}

/** The API answered with an error. */
export class PigeonApiError extends PigeonError {
  override name = 'PigeonApiError';
  /** The HTTP status. */
  readonly status: number;
  /** The machine-readable code; test this, not `message`. */
  readonly code: PigeonErrorCode;
  /** Where the code is explained (`…/docs/errors#<code>`). */
  readonly docs_url: string;
  /** The offending fields, when the server named them. */
  readonly details: ErrorDetail[];
  /** The response headers (e.g. `retry-after`, `ratelimit-remaining`). */
  readonly headers: Headers;

  constructor(init: { status: number; code: string; message: string; docs_url: string; details?: ErrorDetail[]; headers: Headers }) {
    super(init.message);
    this.status = init.status;
    this.code = init.code;
    this.docs_url = init.docs_url;
    this.details = init.details ?? [];
    this.headers = init.headers;
  }
}

/** Any 401, whatever its code (`invalid_api_key`, `api_key_revoked`, `unauthorized`, …): the key does not work. */
export class PigeonAuthenticationError extends PigeonApiError {
  override name = 'PigeonAuthenticationError';
}

/** 403: the key lacks the scope, or the account is suspended. */
export class PigeonPermissionError extends PigeonApiError {
  override name = 'PigeonPermissionError';
}

/** 429, after the client's own retries were used up. */
export class PigeonRateLimitError extends PigeonApiError {
  override name = 'PigeonRateLimitError';
  /** Seconds the server asked to wait, if it said. */
  get retryAfter(): number | null {
    return parseRetryAfter(this.headers.get('retry-after'));
  }
}

/** 400, 404, 405, 409, 413, 415 or 422: the request needs changing before it can succeed. */
export class PigeonInvalidRequestError extends PigeonApiError {
  override name = 'PigeonInvalidRequestError';
}

/** 5xx, after the client's own retries were used up. */
export class PigeonServerError extends PigeonApiError {
  override name = 'PigeonServerError';
}

/** No answer: the connection failed, was dropped, or timed out. */
export class PigeonConnectionError extends PigeonError {
  override name = 'PigeonConnectionError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** A webhook request that must not be trusted; `reason` says why. */
export class PigeonWebhookError extends PigeonError {
  override name = 'PigeonWebhookError';
  readonly reason: 'missing_signature' | 'invalid_signature' | 'timestamp_out_of_tolerance' | 'invalid_payload';
  constructor(reason: PigeonWebhookError['reason'], message: string) {
    super(message);
    this.reason = reason;
  }
}

/** `Retry-After` as seconds: either a number of seconds or an HTTP date. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (value === null || value.trim() === '') return null;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Number(value);
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, (date - now) / 1000);
}

/** The exception for an error answer, picked by status. */
export function errorFromResponse(status: number, body: unknown, headers: Headers): PigeonApiError {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const init = {
    status,
    code: typeof b.code === 'string' ? b.code : `http_${status}`,
    message: typeof b.message === 'string' ? b.message : `HTTP ${status} with no Pigeon error body`,
    docs_url: typeof b.docs_url === 'string' ? b.docs_url : '',
    details: Array.isArray(b.details) ? (b.details as ErrorDetail[]) : [],
    headers,
  };
  if (status === 401) return new PigeonAuthenticationError(init);
  if (status === 403) return new PigeonPermissionError(init);
  if (status === 429) return new PigeonRateLimitError(init);
  if (status >= 500) return new PigeonServerError(init);
  if (status >= 400) return new PigeonInvalidRequestError(init);
  return new PigeonApiError(init);
}
