/**
 * The shapes of the Pigeon API, as the server's route schemas define them (src/http/schemas.ts);
 * test/types-drift.test.ts fails the type check if the two part ways.
 */

/** `GSM-7` text packs 160 characters in one segment; anything else is `UCS-2` (70). */
export type Encoding = 'GSM-7' | 'UCS-2';
/** `scheduled` until `send_at`, then `pending`; a scheduled message may end `canceled` instead. */
export type MessageStatus = 'scheduled' | 'pending' | 'sent' | 'delivered' | 'failed' | 'canceled';
export type SenderIdStatus = 'pending' | 'approved' | 'rejected';
/** `marketing` messages are held outside the account's quiet hours in the recipient's time zone. */
export type Category = 'transactional' | 'marketing';

/** A delivery event a send's `callback_url` can be limited to. */
export type CallbackEvent = 'sms.sent' | 'sms.delivered' | 'sms.failed';

export interface SendRequest {
  /** E.164 recipient, e.g. `+14155552671` (spaces, `-`, `.`, `(`, `)` tolerated). */
  to: string;
  /** An approved Sender ID of the account. */
  from: string;
  /** 1 to 1,600 characters. */
  message: string;
  /** HTTPS URL that receives this message's webhook events. */
  callback_url?: string;
  /** The events `callback_url` gets (every one when absent): `['sms.delivered', 'sms.failed']` for the outcome alone. */
  callback_events?: CallbackEvent[];
  /** RFC 3339 with an offset, up to 35 days ahead: debited now, sent then. */
  send_at?: string;
  /** Seconds (60 to 259,200) to dispatch and deliver within, else `failed` with `expired`. */
  validity_period?: number;
  /** Default `transactional`. */
  category?: Category;
  /** Every http(s) URL of the text becomes a short link of its own whose clicks are counted. */
  track_links?: boolean;
}

export interface SendResult {
  status: 'success';
  message_id: string;
  /** The recipient exactly as given. */
  to: string;
  from: string;
  segments: number;
  encoding: Encoding;
  credits_used: number;
  credits_remaining: number;
  /** When the request gave `send_at`: the release time, in UTC. */
  send_at?: string;
  /** When the request gave one. */
  validity_period?: number;
  /** Marketing messages only: when the quiet-hours window next opens, if held until then; null when not held. */
  held_until?: string | null;
}

export interface BulkRequest {
  from: string;
  messages: { to: string; message: string }[];
  callback_url?: string;
  /** The events `callback_url` gets for each message (every one when absent). */
  callback_events?: CallbackEvent[];
  /** For every message of the batch. */
  send_at?: string;
  /** For every message of the batch. */
  validity_period?: number;
  /** For every message of the batch; default `transactional`. */
  category?: Category;
  /** Every http(s) URL of each text becomes a short link of its own whose clicks are counted. */
  track_links?: boolean;
}

export interface BulkResult {
  status: 'success';
  batch_id: string;
  total: number;
  /** Lower than `total` when some entries were invalid; those are in `errors`. */
  queued: number;
  credits_used: number;
  credits_remaining: number;
  send_at?: string;
  validity_period?: number;
  messages: { index: number; message_id: string; to: string; segments: number; encoding: Encoding; held_until?: string | null }[];
  errors: { index: number; to: string; code: string; message: string }[];
}

/**
 * A Sender ID. `id` is optional because some integrations document a variant answer whose
 * records carry only `name`, `status` and `created_at`; Pigeon itself always sends it.
 */
export interface SenderId {
  id?: string;
  name: string;
  status: SenderIdStatus;
  created_at: string;
}

export interface DeliveryReport {
  message_id: string;
  batch_id: string | null;
  /** E.164. */
  to: string;
  from: string;
  status: MessageStatus;
  segments: number;
  encoding: Encoding;
  /** Credits charged at acceptance (segments × the price then); a refund gives back exactly this. */
  credits_used: number;
  error_code: string | null;
  error_message: string | null;
  created_at: string;
  /** `null` until handed to the carrier. */
  sent_at: string | null;
  /** `null` unless delivered. */
  delivered_at: string | null;
  /** When a scheduled message is (or was) released; `null` for one sent at once. */
  send_at: string | null;
  category: Category;
  /** A marketing message held by the account's quiet hours: when the window next opens; `null` otherwise. */
  held_until: string | null;
}

/** `POST /v1/sms/{id}/cancel` and `POST /v1/sms/batches/{batch_id}/cancel`. */
export interface CancelResult {
  status: 'success';
  data: {
    /** The messages moved from `scheduled` to `canceled`. */
    canceled: string[];
    /** Credits given back (one ledger row). */
    credits_refunded: number;
  };
}

export interface Pagination {
  page: number;
  limit: number;
  total: number;
}

export interface DeliveryReportQuery {
  message_id?: string;
  batch_id?: string;
  status?: MessageStatus;
  /** From 1; default 1. */
  page?: number;
  /** 1 to 200; default 50. */
  limit?: number;
}

/** `GET /v1/sms/sender-ids`. */
export interface SenderIdList {
  status: 'success';
  data: SenderId[];
}

/** `POST /v1/sms/sender-ids`. */
export interface SenderIdCreated {
  status: 'success';
  data: SenderId;
}

/** `GET /v1/sms/links`: exactly one of `message_id` and `batch_id`. */
export interface LinkQuery {
  message_id?: string;
  batch_id?: string;
  page?: number;
  /** 1 to 200, default 50. */
  limit?: number;
}

/** A tracked link of a message sent with `track_links`. */
export interface TrackedLink {
  message_id: string;
  /** The original URL. */
  url: string;
  /** What the message carried: LINK_BASE_URL/<code>. */
  short_url: string;
  /** Counted clicks (previews, crawlers, scanners and HEAD requests are not). */
  clicks: number;
  first_clicked_at: string | null;
}

export interface LinkPage {
  status: 'success';
  data: TrackedLink[];
  pagination: Pagination;
}

export interface DeliveryReportPage {
  status: 'success';
  data: DeliveryReport[];
  pagination: Pagination;
}

export interface Account {
  id: string;
  name: string;
  status: 'active' | 'suspended';
  credits_remaining: number;
  /** Messages accepted and not yet handed to the carrier. */
  messages_pending: number;
}

/** `GET /v1/account`. */
export interface AccountResult {
  status: 'success';
  data: Account;
}

export type WebhookEventType = 'sms.sent' | 'sms.delivered' | 'sms.failed';

/** The body of a webhook request (spec 6.2). */
export interface WebhookEvent {
  event: WebhookEventType;
  message_id: string;
  /** `null` for single sends. */
  batch_id: string | null;
  to: string;
  from: string;
  status: 'sent' | 'delivered' | 'failed';
  delivered_at: string | null;
  sent_at: string | null;
  timestamp: string;
  /** Only on `sms.failed`. */
  error_code?: string;
  /** Only on `sms.failed`. */
  error_message?: string;
}

/** One try at delivering a webhook event. */
export interface WebhookAttempt {
  /** 1 for the first attempt. */
  attempt: number;
  attempted_at: string;
  /** The receiver's status, or `null` when no response came. */
  http_status: number | null;
  /** Why the attempt failed; `null` on success. */
  error: string | null;
  latency_ms: number;
}

export type WebhookDeliveryStatus = 'pending' | 'delivered' | 'undelivered';

/** A webhook event as `GET /v1/webhooks/events` shows it: what was sent, where, and how it went. */
export interface WebhookEventRecord {
  /** Also sent as the `X-Pigeon-Event-Id` header. */
  id: string;
  event: string;
  /** `null` for an account event (`sms.received`, `recipient.opted_out`, `recipient.opted_in`). */
  message_id: string | null;
  /** The inbound message an account event is about; `null` otherwise. */
  inbound_id: string | null;
  batch_id: string | null;
  url: string;
  status: WebhookDeliveryStatus;
  attempt_count: number;
  last_error: string | null;
  next_attempt_at: string | null;
  created_at: string;
  updated_at: string;
  /** The exact body sent. */
  payload: Record<string, unknown>;
  attempts: WebhookAttempt[];
}

export interface WebhookEventQuery {
  message_id?: string;
  batch_id?: string;
  status?: WebhookDeliveryStatus;
  page?: number;
  limit?: number;
}

export interface WebhookEventPage {
  status: 'success';
  data: WebhookEventRecord[];
  pagination: Pagination;
}

/** `POST /v1/webhooks/events/{id}/retry`. */
export interface WebhookEventAccepted {
  status: 'success';
  data: WebhookEventRecord;
}

/** A phone number assigned to the account (`GET /v1/numbers`). */
export interface PhoneNumber {
  /** E.164, or a short code of 3 to 8 digits. */
  number: string;
  label: string | null;
  created_at: string;
}

export interface NumberList {
  status: 'success';
  data: PhoneNumber[];
}

/** A message received on one of the account's numbers. */
export interface InboundMessage {
  /** `in_…` */
  id: string;
  /** The sender, in E.164 when the carrier gave a phone number. */
  from: string;
  /** The account's number. */
  to: string;
  message: string;
  segments: number;
  /** `GSM-7`, `UCS-2`, `Latin-1` or `8-bit`. */
  encoding: string;
  received_at: string;
  /** Present when a multi-part message was stored with the parts that came within 60 seconds. */
  incomplete?: true;
}

export interface InboundQuery {
  from?: string;
  to?: string;
  /** RFC 3339; received at or after. */
  since?: string;
  /** RFC 3339; received at or before. */
  until?: string;
  page?: number;
  limit?: number;
}

export interface InboundPage {
  status: 'success';
  data: InboundMessage[];
  pagination: Pagination;
}

/** `POST /v1/simulator/inbound`. */
export interface SimulatedInbound {
  from: string;
  to: string;
  message: string;
}

export interface InboundCreated {
  status: 'success';
  data: InboundMessage;
}

export type OptOutSource = 'keyword' | 'api' | 'operator';

/** A recipient on the account's opt-out list. */
export interface OptOut {
  phone: string;
  /** `keyword`: the recipient texted STOP; only their START lifts it. */
  source: OptOutSource;
  created_at: string;
}

export interface OptOutQuery {
  phone?: string;
  page?: number;
  limit?: number;
}

export interface OptOutPage {
  status: 'success';
  data: OptOut[];
  pagination: Pagination;
}

export interface OptOutResult {
  status: 'success';
  data: OptOut;
}

/** `PUT /v1/account/events-url`. */
export interface EventsUrlResult {
  status: 'success';
  data: { url: string | null };
}

/** `GET|PUT /v1/account/quiet-hours`: the marketing sending window, HH:MM in the recipient's local time. */
export interface QuietHours {
  start: string;
  end: string;
}

export interface QuietHoursResult {
  status: 'success';
  data: QuietHours;
}

/** `sms.received`, POSTed to the account's events URL. */
export interface SmsReceivedEvent {
  event: 'sms.received';
  timestamp: string;
  data: InboundMessage;
}

/** `recipient.opted_out` and `recipient.opted_in`, POSTed to the account's events URL. */
export interface OptOutEvent {
  event: 'recipient.opted_out' | 'recipient.opted_in';
  timestamp: string;
  data: {
    phone: string;
    /** The number the keyword came to; `null` for a change through the API or by the operator. */
    number: string | null;
    source: OptOutSource;
  };
}

/** Any event POSTed to the account's events URL. */
export type AccountEvent = SmsReceivedEvent | OptOutEvent;

/** `POST /v1/sms/quote`: what a send would cost; nothing is sent or debited. */
export interface QuoteResult {
  status: 'success';
  data: {
    segments: number;
    encoding: Encoding;
    /** The destination's price on the account's rate card now. */
    credits_per_segment: number;
    /** segments × credits_per_segment. */
    credits: number;
    /**
     * Marketing messages only: when the quiet-hours window opens, if the send would be held until
     * then at the time it would go (now, or its `send_at`); null when it would go at once.
     */
    held_until?: string | null;
  };
}

/** `GET /v1/pricing?to=...`: a destination's price now and its next dated change. */
export interface PricingResult {
  status: 'success';
  data: {
    /** E.164. */
    to: string;
    /** The longest prefix of the rate card matching `to`. */
    prefix: string;
    credits_per_segment: number;
    effective_from: string;
    /** `blocked`: sends will be refused; null: it will have no price. */
    next_change: { credits_per_segment: number | 'blocked' | null; effective_from: string } | null;
  };
}

/** Who made a change recorded in the audit log. */
export interface AuditActor {
  type: 'member' | 'operator' | 'api_key' | 'cli' | 'system';
  id: string | null;
  email: string | null;
}

/** One change to the account: who, what, from where, before and after (never a secret or message text). */
export interface AuditEvent {
  id: string;
  at: string;
  account_id: string | null;
  actor: AuditActor;
  /** Such as `api_key.created`. */
  action: string;
  target: { type: string; id: string } | null;
  ip: string | null;
  /** `{"field":[before, after]}`. */
  changes: Record<string, unknown[]>;
}

export interface AuditEventQuery {
  /** An action (`api_key.created`) or its resource (`api_key`). */
  action?: string;
  /** ISO 8601 date or date-time: records at or after it. */
  since?: string;
  page?: number;
  limit?: number;
}

export interface AuditEventPage {
  status: 'success';
  data: AuditEvent[];
  pagination: Pagination;
}

/** Verify (one-time codes): a service, one brand's settings. */
export interface VerifyService {
  id: string;
  name: string;
  /** An approved Sender ID or a number of the account. */
  from: string;
  code_length: number;
  lifetime_seconds: number;
  max_checks: number;
  max_sends: number;
  /** ISO 3166 alpha-2 codes, or null for every country the account may send to. */
  allowed_countries: string[] | null;
  fraud_guard: 'block' | 'monitor' | 'off';
  /** With `{code}` and `{name}`. */
  template: string;
  created_at: string;
}

export interface VerifyServiceRequest {
  name: string;
  from: string;
  code_length?: number;
  lifetime_seconds?: number;
  allowed_countries?: string[] | null;
  fraud_guard?: 'block' | 'monitor' | 'off';
  template?: string;
}

export type VerifyServiceChanges = Partial<VerifyServiceRequest>;

/** One code sent to one number (and sent again under the same id while pending). */
export interface Verification {
  id: string;
  service_id: string;
  to: string;
  /** `pending`, `approved`, `canceled`, `expired`, `max_attempts_reached` or `blocked`. */
  status: string;
  expires_at: string;
  sends: number;
  checks_left: number;
  /** The latest send's message. */
  message_id: string | null;
  credits_used: number;
}

/** A check of a code: `valid` and the verification's status after it. */
export interface VerificationCheck {
  id: string;
  status: string;
  valid: boolean;
  checks_left: number;
}

/** A check names the verification by its number (`to`) or its id. */
export type VerificationCheckRequest = { code: string; to: string } | { code: string; verification_id: string };

/** A number range blocked by the fraud guard's conversion rule. */
export interface VerifyBlock {
  account_id: string;
  /** The numbers' E.164 form without the last 3 digits. */
  range: string;
  blocked_at: string;
  blocked_until: string;
  level: number;
  sent: number;
  approved: number;
}

export interface SafeListEntry {
  entry: string;
  created_at: string;
}

export interface Success<T> {
  status: 'success';
  data: T;
}
