/**
 * Every error Pigeon returns, in one place. The HTTP layer reads `status` and `message` from here,
 * and the `/docs/errors` page renders the same object, so the two cannot drift apart
 * (test/api/protocol.test.ts holds them together: every code thrown in src/ is catalogued, and the page lists every one).
 */
export interface ErrorSpec {
  /** HTTP status the code is returned with. */
  readonly status: number;
  /** Default human-readable message; a thrown error may replace it with a more specific one. */
  readonly message: string;
  /** When the code is returned, for the docs page. */
  readonly description: string;
  /** Whether repeating the same request later can succeed without changing it. */
  readonly retryable: boolean;
}

export const catalogue = {
  // Request shape
  invalid_request: {
    status: 400,
    message: 'The request is malformed.',
    description:
      'Malformed JSON, a missing or wrongly typed field, an unknown field value, or a bad query parameter (for example `limit` above 200 or below 1, `page` below 1, an unknown `status`). `details` names each offending field.',
    retryable: false,
  },
  invalid_recipient: {
    status: 400,
    message: '`to` is not a valid E.164 number.',
    description:
      '`to` must be `+` followed by 8 to 15 digits (visual separators such as spaces, `-`, `.`, `(` and `)` are allowed) and a possible number for its country code.',
    retryable: false,
  },
  invalid_sender_id: {
    status: 400,
    message: '`from` is not a registered and approved Sender ID of this account.',
    description: 'The Sender ID in `from` is not registered on the account, or is still `pending`, or was `rejected`; or `from` is a number (E.164 or short code) not assigned to the account.',
    retryable: false,
  },
  invalid_message: {
    status: 400,
    message: '`message` must be between 1 and 1,600 characters.',
    description: 'The message body is empty or longer than 1,600 characters.',
    retryable: false,
  },
  invalid_callback_url: {
    status: 400,
    message: '`callback_url` must be an absolute https:// URL.',
    description: '`callback_url` is not an absolute `https://` URL. Webhooks are only delivered over HTTPS.',
    retryable: false,
  },
  invalid_events_url: {
    status: 400,
    message: '`url` must be an absolute https:// URL.',
    description: 'The account events URL is not an absolute `https://` URL of at most 2,048 characters, or carries credentials. Events are only delivered over HTTPS.',
    retryable: false,
  },
  recipient_opted_out: {
    status: 400,
    message: 'The recipient opted out of messages from this account.',
    description: 'The recipient replied STOP (or was added to the opt-out list through the API or by the operator): nothing is sent, stored or charged. In bulk, a per-entry error.',
    retryable: false,
  },
  opt_out_by_recipient: {
    status: 409,
    message: 'The recipient opted out by keyword; only their START lifts it.',
    description: '`DELETE /v1/opt-outs/{phone}` for a recipient who replied STOP: only the recipient can opt back in, by replying START.',
    retryable: false,
  },
  invalid_sender_id_name: {
    status: 400,
    message: 'A Sender ID name is 1 to 11 letters (A-Z, a-z) and digits (0-9).',
    description:
      'The name to register is empty, longer than 11 characters, or contains something other than letters A-Z, a-z and digits 0-9 (no spaces, hyphens, underscores or punctuation).',
    retryable: false,
  },
  sender_id_not_allowed: {
    status: 400,
    message: 'This Sender ID name is reserved or protected.',
    description:
      'The name is on the reserved list (government agencies, emergency services, banks and well-known brands). Names that impersonate others are rejected.',
    retryable: false,
  },
  sender_id_exists: {
    status: 409,
    message: 'The account already has a Sender ID with this name.',
    description: 'Sender ID names are unique per account, compared case-insensitively.',
    retryable: false,
  },
  number_taken: {
    status: 409,
    message: 'This number is already assigned to an account.',
    description: 'A number belongs to at most one account: release it (`pigeon number release NUMBER`) before assigning it elsewhere.',
    retryable: false,
  },
  system_id_taken: {
    status: 409,
    message: 'This SMPP system_id is already in use.',
    description: 'An SMPP user\'s `system_id` is unique in the installation: choose another (`pigeon smpp-user create ACCOUNT_ID --system-id NAME`).',
    retryable: false,
  },
  route_name_taken: {
    status: 409,
    message: 'A route with this name exists already.',
    description: 'SMPP route names are unique in the installation: change the route (`pigeon route update NAME`) or choose another name.',
    retryable: false,
  },
  invalid_number: {
    status: 400,
    message: 'A number is E.164 (`+` and the country calling code) or a short code of 3 to 8 digits.',
    description: 'The number to assign is neither a possible E.164 number nor a short code of 3 to 8 digits.',
    retryable: false,
  },
  too_many_messages: {
    status: 400,
    message: 'Too many messages in one bulk request.',
    description: 'A bulk request carries at most `BULK_MAX_MESSAGES` entries (10,000 by default). Split larger campaigns into several calls.',
    retryable: false,
  },
  // Scheduling
  invalid_send_at: {
    status: 400,
    message: '`send_at` must be an RFC 3339 date-time with an offset, from now to 35 days ahead.',
    description:
      '`send_at` is not an RFC 3339 date-time with an offset (`Z` or `+01:00`), or is more than 30 seconds in the past, or more than 35 days ahead. Up to 30 seconds in the past counts as now.',
    retryable: false,
  },
  invalid_validity_period: {
    status: 400,
    message: '`validity_period` must be a whole number of seconds from 60 to 259,200.',
    description: '`validity_period` is not a whole number, or is below 60 seconds, or above 259,200 seconds (72 hours).',
    retryable: false,
  },
  not_cancelable: {
    status: 409,
    message: 'Nothing is left to cancel.',
    description: 'Only a message that is still `scheduled` can be canceled; this message (or every message of this batch) was already released to dispatch or canceled.',
    retryable: false,
  },
  // Authentication and authorisation
  not_redactable: {
    status: 409,
    message: 'The message is not in a final state yet, so it cannot be redacted.',
    description:
      '`POST /v1/sms/{message_id}/redact` or `POST /v1/sms/batches/{batch_id}/redact` for a message that is still `scheduled`, `pending` or `sent`: its text is still to be sent, or its number still needed for the receipt. A batch is redacted whole: while one of its messages is not `delivered`, `failed` or `canceled`, nothing of it is redacted. Retry once it is final (or cancel a scheduled one first).',
    retryable: true,
  },
  invalid_api_key: {
    status: 401,
    message: 'The API key is missing, malformed or unknown.',
    description:
      'Send `Authorization: Bearer <API_KEY>`. The key is compared exactly: leading or trailing whitespace, or a second space after `Bearer`, makes it invalid.',
    retryable: false,
  },
  api_key_revoked: {
    status: 401,
    message: 'The API key has been revoked.',
    description: 'The key was revoked. Create a new key and use it instead; revoked keys cannot be restored.',
    retryable: false,
  },
  unauthorized: {
    status: 401,
    message: 'Authentication failed.',
    description:
      'Listed by the send endpoint reference for any authentication failure. Pigeon returns the more precise `invalid_api_key` or `api_key_revoked`; clients should treat every 401 as an authentication failure.',
    retryable: false,
  },
  insufficient_permissions: {
    status: 403,
    message: 'The API key lacks the permission for this action.',
    description:
      'The key is valid but its scopes do not include the one this endpoint needs (`sms:send`, `sender_ids:read`, `sender_ids:write`, `reports:read`, `account:read`, `account:write`, `numbers:read`, `inbound:read`, `opt_outs:read`, `opt_outs:write`). Also `/metrics` asked from another host (or through a proxy) while `METRICS_TOKEN` is unset.',
    retryable: false,
  },
  account_suspended: {
    status: 403,
    message: 'The account is suspended.',
    description: 'The operator has suspended the account. Every endpoint refuses its keys until it is resumed.',
    retryable: false,
  },
  // Credits
  insufficient_credits: {
    status: 422,
    message: 'Not enough credits to send.',
    description:
      'The balance does not cover the segments to send. Nothing was queued or debited; for bulk requests this applies to the whole batch.',
    retryable: false,
  },
  // Quotas and fraud limits
  quota_exceeded: {
    status: 422,
    message: 'The account has reached one of its quotas.',
    description:
      'The account already has as many Sender IDs pending review as it may (20 by default), or its verification documents would exceed its storage quota (50 MiB by default). The message names the quota and how much of it is used. Nothing was stored; wait for the review, or ask the operator to raise the quota.',
    retryable: false,
  },
  daily_limit_reached: {
    status: 429,
    message: 'The account has reached its daily message limit.',
    description:
      'Accounts made by dashboard sign-up may send a limited number of messages per UTC day (1,000 by default) until the operator lifts the limit. A bulk request that would cross the limit is refused whole; nothing was queued or debited. `Retry-After` gives the seconds until the next UTC day.',
    retryable: true,
  },
  destination_not_allowed: {
    status: 400,
    message: 'Messages to this country are not allowed.',
    description:
      'The recipient\'s country calling code is not on the installation\'s or the account\'s list of allowed destinations, or the account\'s rate card blocks its prefix. In a bulk request this is a per-entry error; the other entries are sent.',
    retryable: false,
  },
  invalid_rate_card: {
    status: 400,
    message: 'The rate card file cannot be read.',
    description:
      'A rate card import (`pigeon rate-card import`, the operator console) whose file is not the CSV `prefix,credits_per_segment`: the message names the first bad line by its number in the file (the header is line 1). Nothing was changed.',
    retryable: false,
  },
  destination_not_priced: {
    status: 400,
    message: 'Messages to this destination have no price.',
    description:
      'No entry of the account\'s rate card matches the recipient\'s number, so it cannot be charged: nothing was sent or debited. `GET /v1/pricing?to=...` shows a destination\'s price; the operator sets prices. In a bulk request this is a per-entry error; the other entries are sent.',
    retryable: false,
  },
  // Idempotency
  idempotency_in_progress: {
    status: 409,
    message: 'A request with this Idempotency-Key is still being processed.',
    description: 'Another request with the same `Idempotency-Key` has not finished yet. Retry after a short wait to receive its result.',
    retryable: true,
  },
  idempotency_key_reused: {
    status: 422,
    message: 'This Idempotency-Key was used with a different request body.',
    description: 'An `Idempotency-Key` identifies one request for 24 hours; reusing it with another body or endpoint is refused.',
    retryable: false,
  },
  // Webhooks
  webhook_event_not_found: {
    status: 404,
    message: 'No webhook event with this id.',
    description: 'The webhook event id is unknown, or belongs to another account.',
    retryable: false,
  },
  webhook_event_not_undelivered: {
    status: 409,
    message: 'Only an undelivered webhook event can be retried.',
    description: 'The event is still `pending` (its scheduled attempts are not over) or already `delivered`; a manual retry applies only to an `undelivered` event.',
    retryable: false,
  },
  // Protocol
  not_found: {
    status: 404,
    message: 'No such resource.',
    description: 'Unknown route, or unknown version prefix (only `/v1` exists); on a cancel, a message or batch id that is unknown or belongs to another account.',
    retryable: false,
  },
  method_not_allowed: {
    status: 405,
    message: 'This method is not allowed on this path.',
    description: 'The path exists but does not accept this HTTP method. The `Allow` header lists the methods it accepts.',
    retryable: false,
  },
  payload_too_large: {
    status: 413,
    message: 'The request body is too large.',
    description: 'The body exceeds the size limit (5 MiB by default).',
    retryable: false,
  },
  unsupported_media_type: {
    status: 415,
    message: 'The request body must be JSON (Content-Type: application/json).',
    description: 'A body was sent with a `Content-Type` other than `application/json`.',
    retryable: false,
  },
  request_timeout: {
    status: 408,
    message: 'The request did not arrive in time.',
    description: 'The request (headers and body) was not received whole within the server\'s request timeout (`REQUEST_TIMEOUT_MS`, 30 s by default); the connection is closed.',
    retryable: true,
  },
  headers_too_large: {
    status: 431,
    message: 'The request headers are too large.',
    description: 'The request line and headers together exceed 16 KiB; the connection is closed.',
    retryable: false,
  },
  rate_limit_exceeded: {
    status: 429,
    message: 'Too many requests.',
    description:
      'The account exceeded its request rate or sent more messages than its share of the dispatch backlog has room for (`DISPATCH_BACKLOG_ACCOUNT_SHARE`), its client address sent too many requests with a missing, unknown or revoked API key (`AUTH_FAILURE_LIMIT`), or too many dashboard sign-ups (`SIGNUP_MAX_PER_HOUR`) or password-reset requests. Wait for the number of seconds in `Retry-After` (the `RateLimit-Reset` header says the same) and retry with exponential backoff.',
    retryable: true,
  },
  // Dashboard
  invalid_credentials: {
    status: 401,
    message: 'The e-mail address or password is wrong.',
    description: 'A dashboard login (owner or operator) with an unknown e-mail address or a wrong password, or a password change with a wrong current password.',
    retryable: false,
  },
  login_locked: {
    status: 429,
    message: 'Too many failed logins; try again later.',
    description:
      'Five failed password checks (dashboard logins or password changes) for one e-mail address from one client address within 15 minutes lock that pair out for 15 minutes, and twenty from one client address lock the address out; each lockout in a row lasts twice as long, up to a day. An attempt counts from the moment it starts, so parallel guesses cannot race past the limit. `Retry-After` gives the seconds left.',
    retryable: true,
  },
  email_taken: {
    status: 409,
    message: 'An account with this e-mail address already exists.',
    description: 'A dashboard sign-up, or a new account made by the operator, with an e-mail address (compared in any case) that already has an account or an owner login. Only when sign-up is `open`: with `SIGNUP=verify` or `closed` the answer never says whether an address has an account.',
    retryable: false,
  },
  email_not_verified: {
    status: 403,
    message: 'Confirm your e-mail address first: follow the link we sent you.',
    description: 'With `SIGNUP=verify`, an owner who has not yet followed the e-mailed confirmation link tried to create an API key or an SMPP user, or register a Sender ID.',
    retryable: false,
  },
  signup_closed: {
    status: 403,
    message: 'Sign-up is closed on this installation; ask the operator for an account.',
    description: 'A dashboard sign-up while `SIGNUP=closed`: the operator creates accounts (`pigeon account create`).',
    retryable: false,
  },
  invalid_csrf_token: {
    status: 403,
    message: 'The form has expired or did not come from this site; reload the page and try again.',
    description: 'A dashboard form was posted without the hidden CSRF token of the session (or of the login page), or with a wrong one.',
    retryable: false,
  },
  invalid_document: {
    status: 400,
    message: 'A verification document must be a PDF, PNG or JPEG file of at most 10 MiB.',
    description: 'A Sender ID verification document uploaded in the dashboard is empty, larger than 10 MiB, or not a PDF, PNG or JPEG (checked on the file\'s content, not its name).',
    retryable: false,
  },
  campaign_file_busy: {
    status: 409,
    message: 'Another campaign file of this account is being checked.',
    description:
      'The dashboard\'s campaign composer reads one file per account at a time: a newer preview replaced this one (its answer goes to a form that has moved on), or more sends of the account are already waiting for their turn.',
    retryable: true,
  },
  recipient_column_unclear: {
    status: 422,
    message: 'Which column of the file holds the phone numbers?',
    description:
      'The dashboard\'s campaign composer finds the recipient column by its usual names (to, phone, phone number, mobile, mobile number, cell, msisdn, number, recipient; any case and spacing). When the file has none of them, or several, the owner chooses the column (`recipient_column`, by its header) and the file is read again.',
    retryable: false,
  },
  internal_error: {
    status: 500,
    message: 'Something went wrong on our side.',
    description: 'An unexpected error. The request may be retried; with an `Idempotency-Key` a retry never sends twice.',
    retryable: true,
  },
  service_unavailable: {
    status: 503,
    message: 'The service is temporarily unable to accept this request.',
    description:
      'The service is overloaded or starting up (the request would take the messages waiting for dispatch past `DISPATCH_BACKLOG_LIMIT`), its database cannot be reached for the moment (PostgreSQL restarting or failing over; `Retry-After` is 5 s), more passwords are waiting to be hashed than the server lets queue (one hash per core at a time, at most 64 waiting), or more campaign files are waiting to be checked than it lets queue (4 at a time and 8 waiting; one XLSX workbook at a time and 4 waiting). Retry after the number of seconds in `Retry-After`.',
    retryable: true,
  },
  storage_full: {
    status: 503,
    message: 'The server\'s storage is full for the moment; retry later.',
    description:
      'The disk that holds the server\'s database is full, or its folder has become read-only, so the request could not be stored (a database transaction is stored whole or not at all). The operator frees space (or mounts the folder again) and the server resumes; retry after the number of seconds in `Retry-After` (30), with an `Idempotency-Key` so that a retry never sends twice.',
    retryable: true,
  },
  // Operator roles (DECISIONS.md §15)
  operator_role_forbidden: {
    status: 403,
    message: 'Your operator role does not allow this.',
    description:
      'The operator console (and the command line acting for a named operator) checks each page and form against the operator\'s role: `support` reviews Sender IDs, reads accounts, messages and binds, and suspends and restores accounts; `finance` adds credits, imports rate cards and reads margin and usage; `admin` does everything. The refusal is recorded in the audit log.',
    retryable: false,
  },
  // Verify (DECISIONS.md §14)
  verify_max_sends: {
    status: 429,
    message: 'The verification was sent as many times as its service allows.',
    description: 'A pending verification is sent at most `max_sends` times (5 by default); after that a new code can be asked for once it expires, is approved or is canceled.',
    retryable: false,
  },
  verify_country_blocked: {
    status: 403,
    message: 'The verify service does not send codes to that country.',
    description: 'The number is outside the service\'s `allowed_countries`. Nothing was sent or charged.',
    retryable: false,
  },
  verify_blocked_fraud: {
    status: 403,
    message: 'Codes to this number range are blocked by the fraud guard.',
    description: 'Over the last 24 hours 10 or more codes were sent to this number range (the number without its last 3 digits) and fewer than 20 % were approved: the range is blocked for 12 hours (24, 48 … when it happens again). The verification is `blocked`; nothing was sent or charged. The account can put the number or range on its safe list, or the operator can lift the block.',
    retryable: false,
  },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof catalogue;

/** One offending field of a request, for the optional `details` array of an error body. */
export interface ErrorDetail {
  field: string;
  code: string;
  message: string;
}

/**
 * The only error type domain and service code throws for an expected failure. It carries a
 * catalogue code, never an HTTP status: the HTTP layer maps the code.
 */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details?: ErrorDetail[];
  /** Extra response headers (e.g. Retry-After) the HTTP layer should send with this error. */
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, message?: string, opts: { details?: ErrorDetail[]; headers?: Record<string, string> } = {}) {
    super(message ?? catalogue[code].message);
    this.name = 'AppError';
    this.code = code;
    if (opts.details) this.details = opts.details;
    if (opts.headers) this.headers = opts.headers;
  }

  get status(): number {
    return catalogue[this.code].status;
  }
}

export function isErrorCode(value: string): value is ErrorCode {
  return Object.hasOwn(catalogue, value);
}

/** Where a code is explained: an anchor of the served `/docs/errors` page. */
export function docsUrl(publicUrl: string, code: string): string {
  return `${publicUrl}/docs/errors#${code}`;
}
