/**
 * The audit log's rules (DECISIONS.md §15), apart from any I/O: who may appear as an actor, the
 * actions recorded, what a filter may ask, and the redaction every record passes through before
 * it is stored, so that no secret and no message text ever reaches the log whatever a caller puts
 * in `changes`.
 */

export const ACTOR_TYPES = ['member', 'operator', 'api_key', 'cli', 'system'] as const;
export type ActorType = (typeof ACTOR_TYPES)[number];

/**
 * Who made a change: a person of an account's dashboard (`member`, id `own_...`), an operator of
 * the console (`op_...`), an API key (`key_...`, email null), the command line (id: the OS user
 * running `pigeon`) or Pigeon itself (`system`: a background worker).
 */
export interface AuditActor {
  type: ActorType;
  id: string | null;
  email: string | null;
}

export interface AuditTarget {
  type: string;
  id: string;
}

/** `{"field":[before, after]}`: null for "none" (before a creation, after a removal). */
export type AuditChanges = Record<string, [unknown, unknown]>;

/** A record as every read surface shows it. */
export interface AuditEvent {
  id: string;
  /** ISO 8601, UTC. */
  at: string;
  account_id: string | null;
  actor: AuditActor;
  action: string;
  target: AuditTarget | null;
  ip: string | null;
  changes: AuditChanges;
}

export const SYSTEM_ACTOR: AuditActor = { type: 'system', id: null, email: null };

/**
 * Every action recorded, with what it means (docs/security.md lists the same, and a test holds
 * the two together). Names are `<resource>.<verb in the past>`.
 */
export const AUDIT_ACTIONS = {
  'member.signed_up': 'a person signed up, creating an account',
  'member.signed_in': 'a person of an account signed in to the dashboard',
  'member.sign_in_failed': 'a dashboard sign-in was refused (wrong password, locked)',
  'member.password_changed': 'a person changed their password (or set one from a reset link)',
  'member.role_changed': "an owner changed a member's role",
  'member.removed': 'an owner removed a member (or a member left); their sessions ended',
  'member.access_denied': "a member's request was refused for their role (a forged form included)",
  'member.two_factor_enabled': 'a person of an account turned two-factor sign-in on',
  'member.two_factor_disabled': 'a person of an account turned two-factor sign-in off',
  'member.two_factor_reset': "an owner reset a member's two-factor sign-in; their sessions ended",
  'member.recovery_code_used': 'a person of an account signed in (or turned two-factor off) with a recovery code',
  'member.recovery_codes_regenerated': 'a person of an account replaced their recovery codes with new ones',
  'invitation.sent': 'an owner invited someone to the account by e-mail, with a role',
  'invitation.revoked': 'an owner withdrew a waiting invitation',
  'invitation.accepted': 'an invited person accepted, joining the account with the role',
  'account.two_factor_requirement_changed': 'an owner required two-factor of every member, or stopped requiring it',
  'operator.signed_in': 'an operator signed in to the console',
  'operator.sign_in_failed': 'a console sign-in was refused',
  'operator.created': 'an operator login was created (`pigeon operator create`)',
  'operator.role_changed': "an operator's role was changed",
  'operator.access_denied': "an operator's request was refused for their role",
  'operator.two_factor_enabled': 'an operator turned two-factor sign-in on',
  'operator.two_factor_reset': "an operator's two-factor sign-in was reset (`pigeon operator reset-2fa`); their sessions ended",
  'operator.recovery_code_used': 'an operator signed in with a recovery code',
  'operator.recovery_codes_regenerated': 'an operator replaced their recovery codes with new ones',
  'account.created': 'an account was created by the operator',
  'account.suspended': 'an account was suspended',
  'account.resumed': 'a suspended account was restored',
  'account.limits_changed': "an account's limits (daily, countries, rate) were changed",
  'account.retention_changed': "an account's retention was changed",
  'account.events_url_set': "the account's events URL was set or changed",
  'account.events_url_removed': "the account's events URL was removed",
  'account.webhook_secret_rotated': 'the webhook signing secret was rotated',
  'account.help_text_changed': "the account's reply to HELP was changed",
  'account.quiet_hours_changed': "the account's quiet-hours sending window was changed",
  'credits.added': 'credits were added to an account',
  'api_key.created': 'an API key was created',
  'api_key.revoked': 'an API key was revoked',
  'sender_id.registered': 'a Sender ID was registered',
  'sender_id.approved': 'a Sender ID was approved',
  'sender_id.rejected': 'a Sender ID was rejected',
  'sender_id.info_requested': 'more information was asked about a Sender ID',
  'opt_out.added': 'a number was added to the opt-out list',
  'opt_out.removed': 'a number was removed from the opt-out list',
  'smpp_user.created': 'SMPP credentials were created',
  'smpp_user.password_rotated': "an SMPP user's password was rotated",
  'smpp_user.deleted': 'an SMPP user was deleted',
  'number.assigned': 'a number was assigned to an account',
  'number.released': 'a number was released from its account',
  'number.sms_url_changed': "a number's Twilio-style SMS URL was changed",
  'twilio.credentials_rotated': 'the Twilio-compatible auth token was created or rotated',
  'rate_card.imported': 'a rate card was imported',
  'account.rate_card_changed': 'an account was given another rate card',
  'route.added': 'an SMPP route was added',
  'route.updated': 'an SMPP route was changed',
  'route.removed': 'an SMPP route was removed',
  'erasure.requested': 'the erasure of a phone number was requested',
  'campaign.created': 'a campaign was created (scheduled or sent)',
  'campaign.canceled': 'a campaign was canceled',
  'message.canceled': 'scheduled messages (one, or a batch) were canceled and refunded',
  'message.redacted': 'the text and number of sent messages (one, or a batch) were removed',
  'message.deleted': 'a message was deleted through the Twilio-compatible API',
  'inbound.redacted': 'the text and sender of a received message were removed',
  'webhook_event.retried': 'an undelivered webhook event was sent again',
  'verify.range_unblocked': "a number range blocked by Verify's fraud guard was unblocked",
} as const satisfies Record<string, string>;

export type AuditAction = keyof typeof AUDIT_ACTIONS;

/** The resources actions belong to (`api_key` for `api_key.created`): a filter may name one. */
export const AUDIT_GROUPS: ReadonlySet<string> = new Set(Object.keys(AUDIT_ACTIONS).map((a) => a.split('.')[0] as string));

/**
 * A filter's `action`: an action's full name, or its resource alone for all of its actions.
 * Returns the exact action or the group, or null when it names neither.
 */
export function parseActionFilter(raw: string): { action: string } | { group: string } | null {
  if (raw in AUDIT_ACTIONS) return { action: raw };
  if (AUDIT_GROUPS.has(raw)) return { group: raw };
  return null;
}

/**
 * Field names whose values are never stored: secrets (passwords, tokens, keys, codes, digests)
 * and message text. Matched on the whole name or on a word of it (`webhook_secret`,
 * `twilio_auth_token`, `password_hash`), at any depth of a value.
 */
const SECRET_WORDS = new Set([
  'password',
  'passwords',
  'secret',
  'token',
  'key',
  'digest',
  'hash',
  'code',
  'codes',
  'otp',
  'totp',
  'recovery',
  'body',
  'message',
  'text',
  'content',
  'authorization',
  'cookie',
  'csrf',
]);

/** Values that are secrets whatever field they are in: API keys, bearer headers. */
const SECRET_VALUE = /^(pk_live_|Bearer\s)/i;

export const REDACTED = '[redacted]';

function isSecretField(name: string): boolean {
  return name
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .some((word) => SECRET_WORDS.has(word));
}

function redactValue(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return SECRET_VALUE.test(value) ? REDACTED : value;
  if (value === null || typeof value !== 'object' || depth > 5) return value;
  if (Array.isArray(value)) return value.map((v) => redactValue(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = isSecretField(k) ? (v === null || v === undefined ? v : REDACTED) : redactValue(v, depth + 1);
  return out;
}

/**
 * The changes as they may be stored: a secret field keeps only whether it had a value (so a
 * rotation still reads as a change), everything else passes with secrets inside it removed.
 */
export function redactChanges(changes: AuditChanges): AuditChanges {
  const out: AuditChanges = {};
  for (const [field, pair] of Object.entries(changes)) {
    const [before, after] = pair;
    if (isSecretField(field)) out[field] = [before == null ? null : REDACTED, after == null ? null : REDACTED];
    else out[field] = [redactValue(before ?? null), redactValue(after ?? null)];
  }
  return out;
}

/** The fields of `after` whose values differ from `before`'s, as changes. */
export function changesBetween(before: Record<string, unknown> | null, after: Record<string, unknown> | null): AuditChanges {
  const out: AuditChanges = {};
  const fields = new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})]);
  for (const field of fields) {
    const a = before?.[field] ?? null;
    const b = after?.[field] ?? null;
    if (JSON.stringify(a) !== JSON.stringify(b)) out[field] = [a, b];
  }
  return out;
}

/** The CSV export's header and one line per record (RFC 4180 quoting; cells read as text by spreadsheets). */
export const AUDIT_CSV_HEADER = ['id', 'at', 'account_id', 'actor_type', 'actor_id', 'actor_email', 'action', 'target_type', 'target_id', 'ip', 'changes'];

export function auditCsvRow(e: AuditEvent): string[] {
  return [e.id, e.at, e.account_id ?? '', e.actor.type, e.actor.id ?? '', e.actor.email ?? '', e.action, e.target?.type ?? '', e.target?.id ?? '', e.ip ?? '', JSON.stringify(e.changes)];
}
