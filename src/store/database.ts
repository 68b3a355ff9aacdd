/**
 * Table types for Kysely. Timestamps are integers of milliseconds since the epoch on both
 * dialects: sortable, exact to the millisecond, and free of time-zone conversions between
 * SQLite and PostgreSQL. They become ISO 8601 strings only at the edge (HTTP, CLI, webhooks).
 */
import type { MessageStatus } from '../domain/message-status.ts';

export type AccountStatus = 'active' | 'suspended';
export type AccountOrigin = 'operator' | 'signup';
export type SenderIdStatus = 'pending' | 'approved' | 'rejected';
export type LedgerKind = 'topup' | 'debit' | 'refund' | 'adjustment';
export type JobQueue = 'dispatch' | 'receipt' | 'webhook' | 'mail';
export type WebhookEventStatus = 'pending' | 'delivered' | 'undelivered';

export interface AccountsTable {
  id: string;
  name: string;
  email: string;
  status: AccountStatus;
  /** Cached balance; always equal to the sum of the account's ledger rows (same transaction). */
  credits: number;
  webhook_secret: string;
  /** The secret before the last rotation; it keeps signing beside the new one for 24 hours. */
  webhook_secret_previous: string | null;
  webhook_secret_rotated_at: number | null;
  created_at: number;
  /** Who made the account: the operator (CLI, console) or the dashboard's sign-up form. */
  origin: AccountOrigin;
  /** Pending Sender IDs allowed at once; null: the installation's SENDER_ID_PENDING_MAX. */
  pending_sender_id_limit: number | null;
  /** Bytes of verification documents allowed; null: the installation's DOCUMENT_QUOTA_BYTES. */
  document_quota_bytes: number | null;
  /** Messages accepted per UTC day; null: no cap. */
  daily_message_limit: number | null;
  /** Messages accepted on `daily_day`, moved by the debit itself. */
  daily_count: number;
  /** The UTC day `daily_count` is about, in days since 1970-01-01. */
  daily_day: number;
  /** Comma-separated calling codes narrowing ALLOWED_COUNTRIES; null: no narrowing. */
  allowed_countries: string | null;
  /** The account's rate card (migration 022); null: `default`. */
  rate_card?: string | null;
  /** Where the account's own events go (inbound, opt-outs); null: nowhere (migration 013). */
  events_url: string | null;
  /** The reply to HELP; null: the default text. */
  help_text: string | null;
  /** The Twilio-compatible API's Account SID (migration 024); null until first asked for. */
  twilio_sid?: string | null;
  /** The Auth Token, in clear: it is the HMAC key of X-Twilio-Signature. */
  twilio_token?: string | null;
  /** The token before the last rotation; it keeps working for 24 hours. */
  twilio_token_previous?: string | null;
  twilio_token_rotated_at?: number | null;
  /** The quiet-hours sending window, minutes after local midnight (migration 033); null: 08:00-20:00. */
  quiet_hours_start?: number | null;
  quiet_hours_end?: number | null;
  /** Days the text of its messages is kept (migration 025); null: RETENTION_BODY_DAYS. */
  retention_body_days?: number | null;
  /** Days its messages are kept; null: RETENTION_MESSAGE_DAYS. */
  retention_message_days?: number | null;
  /** Days before its numbers are masked; null: RETENTION_MASK_NUMBERS_DAYS. */
  retention_mask_days?: number | null;
  /** 1: every member must use two-factor (migration 029). */
  require_2fa?: number;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  label: string;
  /** The first characters of the key, shown so that a person can recognise it. */
  prefix: string;
  /** SHA-256 of the whole key, hex. The key itself is never stored. */
  digest: string;
  /** Comma-separated scopes. */
  scopes: string;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

export interface SenderIdsTable {
  id: string;
  account_id: string;
  name: string;
  /** Upper-cased name: uniqueness per account is case-insensitive. */
  name_key: string;
  status: SenderIdStatus;
  /** The reviewer's reason for a rejection, or note when more information is requested. */
  review_note: string | null;
  created_at: number;
  updated_at: number;
}

export interface CreditLedgerTable {
  id: string;
  account_id: string;
  /** Signed: positive for top-ups and refunds, negative for debits. */
  amount: number;
  kind: LedgerKind;
  /** The message or batch the row is about, if any. */
  reference: string | null;
  note: string | null;
  created_at: number;
}

export interface BatchesTable {
  id: string;
  account_id: string;
  total: number;
  queued: number;
  credits_used: number;
  created_at: number;
  /** The dashboard campaign the batch is part of (migration 016), or null for an API bulk. */
  campaign_id?: string | null;
}

/** A campaign sent from the dashboard's composer: one or more batches (migration 016). */
export interface CampaignsTable {
  id: string;
  account_id: string;
  /** The composer form's random key: unique per account, so one form makes one campaign. */
  form_key: string;
  sender: string;
  template: string;
  /** Data rows of the uploaded file. */
  file_rows: number;
  /**
   * Rows refused (and listed to the owner). The others became messages, except those whose
   * recipient had opted out: `file_rows - invalid_rows - messages` of them, skipped.
   */
  invalid_rows: number;
  messages: number;
  credits: number;
  send_at: number | null;
  /** The zone `send_at` was chosen in. */
  time_zone: string | null;
  created_at: number;
  /** The owner's name for it (migration 019); null for campaigns made before, shown by id. */
  name: string | null;
  /** Rows skipped because an earlier row had the same number (sent once per number). */
  duplicate_rows: number;
  /** 1 when "Reply STOP to opt out" was added to each message. */
  opt_out_line: number;
  /** `marketing` (migration 033); null: transactional. */
  category?: 'marketing' | null;
  /** 1 when the messages' links were tracked (migration 034). */
  track_links?: number;
}

/** What the campaign composer remembers per account for the next file (migration 019). */
export interface CampaignDefaultsTable {
  account_id: string;
  /** ISO 3166-1 alpha-2: the country national numbers are read in; null: none chosen yet. */
  country: string | null;
  /** The header of the recipient column last used. */
  recipient_column: string | null;
  updated_at: number;
}

export interface MessagesTable {
  id: string;
  account_id: string;
  batch_id: string | null;
  /** Recipient, normalised E.164. */
  recipient: string;
  /** Sender ID as registered (its spelling, not the caller's). */
  sender: string;
  body: string;
  encoding: 'GSM-7' | 'UCS-2';
  segments: number;
  status: MessageStatus;
  callback_url: string | null;
  carrier_message_id: string | null;
  error_code: string | null;
  error_message: string | null;
  created_at: number;
  sent_at: number | null;
  delivered_at: number | null;
  updated_at: number;
  /** When a scheduled message is released to dispatch (migration 014); null: at acceptance. */
  send_at: number | null;
  /** The customer's `validity_period` in seconds; null: the carrier's own setting. */
  validity_period: number | null;
  /** `send_at` (or acceptance) plus the validity period; past it the message fails `expired`. */
  expires_at: number | null;
  /** 0 for an opt-out confirmation (free, never refunded, never refused at dispatch); default 1. */
  charged?: number;
  /** `twilio`: the callback URL gets Twilio's form-encoded status callbacks (migration 024). */
  callback_format?: 'twilio' | null;
  /** The events `callback_url` gets, comma-separated (`callback_events`); null for every one. */
  callback_events?: string | null;
  /** The SMPP route that took the message (migration 023); null until one does, and on the simulator. */
  route?: string | null;
  /** What the carrier charges the operator for it: segments × the route's cost_per_segment then. */
  route_cost?: number | null;
  /** Comma-separated routes that refused it or did not answer: not tried again for it. */
  routes_tried?: string | null;
  /** Credits charged at acceptance, segments × the price then (migration 022); null before it. */
  credits?: number | null;
  /** `marketing` for a message sent as marketing (migration 031); null: transactional. */
  category?: 'marketing' | null;
  /** A held marketing message's window opening (migration 033, DECISIONS.md §16); null: not held. */
  held_until?: number | null;
}

export interface JobsTable {
  id: string;
  queue: JobQueue;
  /**
   * The account a dispatch job sends for (migration 015), so that dispatch serves accounts in
   * turn and each account's share of the backlog can be counted; null on the other queues.
   */
  account_id: string | null;
  /** What the job is about: a message id for dispatch and receipts, an event id for webhooks. */
  ref: string;
  /** Queue-specific JSON, or null. */
  payload: string | null;
  /**
   * When the job may next be claimed. Claiming moves it forward by the lease, so a job whose
   * worker died becomes claimable again once the lease has run out.
   */
  run_at: number;
  attempts: number;
  created_at: number;
}

/** A tracked link of a message (migration 034, DECISIONS.md §16). */
export interface LinksTable {
  /** 8 to 10 characters of [0-9A-Za-z]: the short URL is LINK_BASE_URL/<code>. */
  code: string;
  message_id: string;
  batch_id: string | null;
  account_id: string;
  /** The original URL the link redirects to. */
  url: string;
  created_at: number;
  /** Counted clicks: not HEAD, not a preview, crawler or scanner. */
  clicks: number;
  bot_clicks: number;
  first_clicked_at: number | null;
}

/** The time and user agent of one of a link's first fetches (no address). */
export interface LinkClicksTable {
  code: string;
  clicked_at: number;
  user_agent: string | null;
  bot: number;
}

export interface WebhookEventsTable {
  id: string;
  account_id: string;
  /** The message of a delivery event; null for an account event (inbound, opt-outs). */
  message_id: string | null;
  /** The inbound message of an account event, if it has one. */
  inbound_id?: string | null;
  batch_id: string | null;
  event: string;
  url: string;
  /** The exact JSON body, byte-identical on every attempt. */
  payload: string;
  status: WebhookEventStatus;
  attempts: number;
  last_error: string | null;
  created_at: number;
  updated_at: number;
}

export interface WebhookAttemptsTable {
  id: string;
  event_id: string;
  attempt: number;
  attempted_at: number;
  http_status: number | null;
  error: string | null;
  latency_ms: number;
}

export interface IdempotencyKeysTable {
  account_id: string;
  key: string;
  /** SHA-256 of method, path and body: the same key with another request is refused. */
  request_hash: string;
  state: 'in_progress' | 'done';
  response_status: number | null;
  response_body: string | null;
  /** While in progress: when another request may take the key over (its holder died). */
  locked_until: number;
  expires_at: number;
  created_at: number;
}

export interface OperatorsTable {
  id: string;
  /** Lower-cased. */
  email: string;
  /** scrypt, in the self-describing form of src/services/auth/passwords.ts. */
  password_hash: string;
  created_at: number;
  /** `admin`, `support` or `finance` (migration 030; src/domain/operator-roles.ts). */
  role: string;
  /** Two-factor (migration 029): see TwoFactorColumns. */
  totp_secret?: string | null;
  totp_enabled_at?: number | null;
  totp_last_step?: number | null;
}

/** A person who signs in to the dashboard for an account. */
export interface OwnersTable {
  id: string;
  account_id: string;
  /** Lower-cased; one owner login per address. */
  email: string;
  /** scrypt, in the self-describing form of src/services/auth/passwords.ts. */
  password_hash: string;
  created_at: number;
  /** When the owner followed the e-mailed link (SIGNUP=verify); null until then. */
  email_verified_at: number | null;
  /** The IANA time zone the composer reads dates in (migration 016); null until set. */
  time_zone?: string | null;
  /** owner | developer | billing | viewer (migration 029); rows made before it are owners. */
  role?: MemberRole;
  /** The TOTP secret (base32): set while two-factor is being set up or is on. */
  totp_secret?: string | null;
  /** When two-factor was turned on (a valid code confirmed it); null while off. */
  totp_enabled_at?: number | null;
  /** The last TOTP time step accepted, so that a code is not accepted twice. */
  totp_last_step?: number | null;
}

export type MemberRole = 'owner' | 'developer' | 'billing' | 'viewer';

/** An e-mailed invitation to join an account (migration 029). */
export interface MemberInvitationsTable {
  id: string;
  account_id: string;
  email: string;
  role: MemberRole;
  /** SHA-256 of the link's token, hex. */
  token_digest: string;
  /** The member who invited. */
  invited_by: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

/** The digest of one single-use two-factor recovery code of an owner or operator (migration 029). */
export interface RecoveryCodesTable {
  id: string;
  subject_kind: SessionKind;
  subject_id: string;
  code_digest: string;
  created_at: number;
  used_at: number | null;
}

export type OwnerTokenPurpose = 'reset' | 'verify';

/** A single-use e-mailed link for an owner: password reset or address verification. */
export interface OwnerTokensTable {
  id: string;
  /** SHA-256 of the link's token, hex; the token itself is never stored. */
  token_digest: string;
  purpose: OwnerTokenPurpose;
  owner_id: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

/** Fixed-window counters (sign-ups per client address, reset mails per owner). */
export interface RateCountersTable {
  key: string;
  count: number;
  window_started_at: number;
}

export type SessionKind = 'owner' | 'operator';

export interface SessionsTable {
  id: string;
  /** SHA-256 of the cookie's token, hex; the token itself is never stored. */
  token_digest: string;
  kind: SessionKind;
  /** The owner's or operator's id. */
  subject_id: string;
  /** Compared with the hidden field of every form posted in this session. */
  csrf_token: string;
  created_at: number;
  expires_at: number;
  /** SHA-256 of the one-time nonce in the API-key form last shown (migration 012). */
  key_form_nonce?: string | null;
  /** SHA-256 of the last API-key form nonce used: a repeat of that post is recognised. */
  key_form_used?: string | null;
  /** 'code' while a person with two-factor has given the password but not yet the code (migration 029). */
  pending?: string | null;
}

/** Failed logins per e-mail and client address, for the lockout. */
export interface LoginThrottleTable {
  key: string;
  failures: number;
  window_started_at: number;
  locked_until: number | null;
  /** Lockouts in a row without a successful login in between; each doubles the next one. */
  lockouts: number;
}

export interface SenderIdDocumentsTable {
  id: string;
  sender_id_id: string;
  account_id: string;
  filename: string;
  content_type: string;
  size: number;
  content: Buffer;
  created_at: number;
}

/** queued: waiting for the mail worker; sent: accepted by SMTP; held: no SMTP_URL, kept here; failed: retries ran out. */
export type MailStatus = 'queued' | 'sent' | 'held' | 'failed';

export interface MailOutboxTable {
  id: string;
  to_address: string;
  subject: string;
  body_text: string;
  status: MailStatus;
  attempts: number;
  last_error: string | null;
  created_at: number;
  sent_at: number | null;
}

/** Each submitted part's SMSC id (keys of src/carriers/carrier-ids.ts), for receipts. */
export interface CarrierPartsTable {
  message_id: string;
  part_index: number;
  /** The SMSC's id as it answered the submit. */
  carrier_id: string;
  /** Lower-cased, without leading zeros. */
  part_key: string;
  /** The decimal value of part_key read as hexadecimal, when different. */
  part_alt: string | null;
  created_at: number;
}

/** How a carrier route's SMSC spells message ids in receipts (src/carriers/carrier-ids.ts). */
export interface CarrierRoutesTable {
  route: string;
  /** `same`, `hex_as_decimal` (hex ids quoted in decimal) or `decimal_as_hex`. */
  receipt_ids: string;
  updated_at: number;
}

/** An SMPP route (migration 023); the password is kept as given, since binding needs it. */
export interface SmppRoutesTable {
  name: string;
  /** Comma-separated E.164 prefixes; `+` alone matches every recipient. */
  prefixes: string;
  host: string;
  port: number;
  system_id: string;
  password: string;
  system_type: string;
  tps: number;
  window_size: number;
  priority: number;
  /** Credits the carrier charges the operator per segment; null when not given. */
  cost_per_segment: number | null;
  /** Comma-separated command_status values (decimal) that send the message on to the next route. */
  failover_codes: string;
  created_at: number;
  updated_at: number;
}

/** One row (id 1): moved by triggers whenever `smpp_routes` changes. */
export interface RouteRevisionTable {
  id: number;
  value: number;
}

/** A worker process's link to a route, as it last saw it (refreshed every second). */
export interface SmppRouteLinksTable {
  process: string;
  route: string;
  state: string;
  last_error: string | null;
  seen_at: number;
}

/** One row (id 1): moved by triggers whenever a key, an account's status or a Sender ID changes. */
export interface AccessRevisionTable {
  id: number;
  value: number;
}

/** A phone number (E.164 or a short code) assigned to an account (migration 013). */
export interface NumbersTable {
  number: string;
  account_id: string;
  label: string | null;
  created_at: number;
  /** Where messages to the number are POSTed Twilio-style (migration 024); null: nowhere. */
  sms_url?: string | null;
}

/** A message a carrier delivered to a number (migration 013); `account_id` null: unrouted. */
export interface InboundMessagesTable {
  id: string;
  account_id: string | null;
  /** Who sent it, E.164 when the address allowed it. */
  sender: string;
  /** The number it was sent to. */
  recipient: string;
  body: string;
  encoding: string;
  segments: number;
  /** 1 when stored with the parts that came before reassembly timed out. */
  incomplete: number;
  received_at: number;
}

/** One part of a multi-part inbound message, kept until its message is complete or times out. */
export interface InboundPartsTable {
  /** Route, sender, number, reference and part count: what makes parts one message. */
  group_key: string;
  /** The part's place from 1; 0 is the row that marks a group whose message is stored (inbound-parts.repository.ts). */
  seq: number;
  total: number;
  sender: string;
  recipient: string;
  body: string;
  encoding: string;
  received_at: number;
}

/** One part of a long message submitted over SMPP, kept until its message is accepted, refused or given up (migration 026). */
export interface SmppPartsTable {
  group_key: string;
  /** The part's place from 1; 0 marks a group whose message was accepted or refused. */
  seq: number;
  total: number;
  message_id: string;
  system_id: string;
  /** The part's bytes, base64. */
  payload: string;
  data_coding: number;
  registered_delivery: number;
  source_addr: string;
  source_ton: number;
  destination_addr: string;
  /** Machine time (Date.now()), as the wait for the rest is a timer. */
  received_at: number;
}

export type OptOutSource = 'keyword' | 'api' | 'operator';

/** A recipient who opted out of an account (migration 013). */
export interface OptOutsTable {
  account_id: string;
  phone: string;
  source: OptOutSource;
  /** The account's number the keyword came to; null for the API and the operator. */
  number: string | null;
  created_at: number;
}

/** Opt-out confirmations sent per number, recipient and UTC day. */
export interface OptOutRepliesTable {
  number: string;
  phone: string;
  day: number;
  count: number;
}

/** An account's SMPP credentials (migration 020). */
export interface SmppUsersTable {
  system_id: string;
  account_id: string;
  password_hash: string;
  tps: number;
  max_binds: number;
  /** Comma-separated CIDR ranges; empty: any address. */
  allow: string;
  created_at: number;
  rotated_at: number;
}

export type SmppBindType = 'transmitter' | 'receiver' | 'transceiver';

/** A live bind of some process, refreshed while it lasts (migration 020). */
export interface SmppBindsTable {
  id: string;
  system_id: string;
  bind_type: SmppBindType;
  address: string;
  since: number;
  submits: number;
  seen_at: number;
}

/** What the receipts of a message accepted over SMPP need (migration 020). */
export interface SmppMessagesTable {
  message_id: string;
  system_id: string;
  /**
   * The ids of the parts that get receipts, comma-separated: every part's (the first being the
   * message's), or, when only some parts asked for one (Kannel asks on its last part), those.
   */
  part_ids: string;
  /** What the parts that asked for receipts asked (the first of them). */
  registered_delivery: number;
  source_addr: string;
  source_ton: number;
  destination_addr: string;
  created_at: number;
}

/** A deliver_sm waiting for one of its user's receiver binds (migration 020). */
export interface SmppOutboxTable {
  id: string;
  system_id: string;
  kind: 'receipt' | 'inbound';
  message_id: string | null;
  /** The deliver_sm's fields as JSON (smpp-outbox.repository.ts). */
  pdu: string;
  attempts: number;
  next_at: number;
  created_at: number;
  expires_at: number;
}

export interface RateCardsTable {
  name: string;
  created_at: number;
  updated_at: number;
}

export type RateEntryKind = 'price' | 'blocked' | 'removed';

export interface RateCardEntriesTable {
  card: string;
  prefix: string;
  effective_from: number;
  kind: RateEntryKind;
  /** Set for `price` entries only. */
  credits_per_segment: number | null;
}

export interface RateCardRevisionTable {
  id: number;
  value: number;
}

/** What purged messages counted, per account, UTC day, calling code and status (migration 025). */
export interface DailyTotalsTable {
  account_id: string;
  /** UTC day, days since 1970-01-01. */
  day: number;
  /** The destination's calling code (`44`), or '' when none is known. */
  country: string;
  status: MessageStatus;
  messages: number;
  segments: number;
  credits: number;
}

export type RetentionCursorKind = 'body' | 'mask' | 'inbound_body' | 'inbound_mask';

/** How far a text or number purge has gone through an account's rows (ordered by time, id). */
export interface RetentionCursorsTable {
  account_id: string;
  kind: RetentionCursorKind;
  at: number;
  id: string;
}

/** A message a text or number purge passed while it was not yet final. */
export interface RetentionDeferredTable {
  message_id: string;
  account_id: string;
  created_at: number;
}

export type ErasureStatus = 'pending' | 'done';

/** A request to erase a phone number (migration 025); `account_id` null: every account. */
export interface ErasuresTable {
  id: string;
  account_id: string | null;
  phone: string;
  requested_by: 'api' | 'operator';
  status: ErasureStatus;
  messages: number;
  inbound: number;
  events: number;
  /** Stored idempotent responses rewritten. */
  responses: number;
  created_at: number;
  finished_at: number | null;
}

/** One change made by a person, an API key or the command line (migration 030; append-only). */
export interface AuditEventsTable {
  id: string;
  at: number;
  account_id: string | null;
  actor_type: string;
  actor_id: string | null;
  actor_email: string | null;
  action: string;
  target_type: string | null;
  target_id: string | null;
  ip: string | null;
  /** JSON: `{"field":[before,after]}`, secrets already redacted. */
  changes: string;
}

export interface Database {
  audit_events: AuditEventsTable;
  rate_cards: RateCardsTable;
  rate_card_entries: RateCardEntriesTable;
  rate_card_revision: RateCardRevisionTable;
  daily_totals: DailyTotalsTable;
  retention_cursors: RetentionCursorsTable;
  retention_deferred: RetentionDeferredTable;
  erasures: ErasuresTable;
  smpp_users: SmppUsersTable;
  smpp_binds: SmppBindsTable;
  smpp_messages: SmppMessagesTable;
  smpp_outbox: SmppOutboxTable;
  access_revision: AccessRevisionTable;
  operators: OperatorsTable;
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  sender_ids: SenderIdsTable;
  credit_ledger: CreditLedgerTable;
  batches: BatchesTable;
  campaigns: CampaignsTable;
  campaign_defaults: CampaignDefaultsTable;
  messages: MessagesTable;
  jobs: JobsTable;
  webhook_events: WebhookEventsTable;
  links: LinksTable;
  link_clicks: LinkClicksTable;
  webhook_attempts: WebhookAttemptsTable;
  idempotency_keys: IdempotencyKeysTable;
  carrier_parts: CarrierPartsTable;
  carrier_routes: CarrierRoutesTable;
  smpp_routes: SmppRoutesTable;
  route_revision: RouteRevisionTable;
  smpp_route_links: SmppRouteLinksTable;
  owners: OwnersTable;
  sessions: SessionsTable;
  login_throttle: LoginThrottleTable;
  owner_tokens: OwnerTokensTable;
  member_invitations: MemberInvitationsTable;
  recovery_codes: RecoveryCodesTable;
  rate_counters: RateCountersTable;
  sender_id_documents: SenderIdDocumentsTable;
  mail_outbox: MailOutboxTable;
  numbers: NumbersTable;
  inbound_messages: InboundMessagesTable;
  inbound_parts: InboundPartsTable;
  smpp_parts: SmppPartsTable;
  opt_outs: OptOutsTable;
  opt_out_replies: OptOutRepliesTable;
  installation_secrets: InstallationSecretsTable;
  verify_services: VerifyServicesTable;
  verifications: VerificationsTable;
  verify_texts: VerifyTextsTable;
  verify_blocks: VerifyBlocksTable;
  verify_safe_list: VerifySafeListTable;
}

/** Secrets of the installation, made on first use (migration 028). */
export interface InstallationSecretsTable {
  name: string;
  value: string;
  created_at: number;
}

/** A verify service: one brand's code settings (DECISIONS.md §14). */
export interface VerifyServicesTable {
  id: string;
  account_id: string;
  name: string;
  sender: string;
  code_length: number;
  lifetime_seconds: number;
  max_checks: number;
  max_sends: number;
  /** Comma-separated ISO 3166 codes, or null for every country. */
  allowed_countries: string | null;
  fraud_guard: 'block' | 'monitor' | 'off';
  template: string | null;
  created_at: number;
  deleted_at: number | null;
}

export type VerificationStatus = 'pending' | 'approved' | 'canceled' | 'expired' | 'max_attempts_reached' | 'blocked';

export interface VerificationsTable {
  id: string;
  account_id: string;
  service_id: string;
  recipient: string;
  /** The E.164 number without its last 3 digits. */
  range_prefix: string;
  country: string | null;
  /** HMAC-SHA256 (hex) of the id and the code under the installation's key; null when nothing was sent. */
  code_hash: string | null;
  status: VerificationStatus;
  sends: number;
  checks_left: number;
  message_id: string | null;
  credits_used: number;
  last_sent_at: number | null;
  expires_at: number;
  created_at: number;
  updated_at: number;
}

/** The real text of a verification's message, for the carrier only. */
export interface VerifyTextsTable {
  message_id: string;
  verification_id: string;
  body: string;
}

export interface VerifyBlocksTable {
  account_id: string;
  range_prefix: string;
  level: number;
  blocked_at: number;
  blocked_until: number;
  sent: number;
  approved: number;
}

export interface VerifySafeListTable {
  account_id: string;
  entry: string;
  created_at: number;
}
