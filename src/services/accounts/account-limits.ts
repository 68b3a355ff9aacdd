/**
 * Limits per account that keep one tenant from taking more than its share or turning the gateway
 * into a fraud tool (docs/security.md): quotas on pending Sender IDs and stored documents, the
 * daily message cap of self-signed-up accounts, and the destination allowlist. Each has an
 * installation default (src/config/config.ts) that the operator overrides per account with
 * `pigeon account limits` or the console.
 *
 * Where each is enforced, so that parallel requests can never get past it:
 * - the quotas: in the transaction that inserts the Sender ID or the documents (sender-ids.ts,
 *   documents.ts), after locking the account's row;
 * - the daily cap: in the UPDATE that debits the credits (acceptance-batcher.ts);
 * - the destinations: per entry before acceptance, from the access cache, and again at commit for
 *   a send whose access revision moved meanwhile (changing the list moves it: migration 009).
 */
import { AppError } from '../../errors/catalogue.ts';
import { callingCodeOf, parseCallingCodes } from '../../domain/calling-codes.ts';
import type { Config } from '../../config/config.ts';
import type { AccountOrigin } from '../../store/database.ts';
import type { Executor } from '../../store/connect.ts';
import {
  accountLimitsRow,
  allowedCountriesNow,
  allowedCountriesRow,
  countPendingSenderIds,
  storedDocumentBytes,
  updateAccountLimits,
  type AccountLimitsRow,
  type LimitsPatch,
} from '../../store/repositories/account-limits.repository.ts';
import { accessSnapshot, type AccessSnapshot } from '../auth/access-cache.ts';
import { recordAudit } from '../audit/audit.ts';
import { changesBetween } from '../../domain/audit.ts';
import { findAccount } from '../../store/repositories/accounts.repository.ts';
import type { Context } from '../context.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

/** The UTC day of a timestamp, in days since 1970-01-01: the unit of the daily cap. */
export function utcDay(ms: number): number {
  return Math.floor(ms / DAY_MS);
}

/** The limits in force for an account, in the shape of `pigeon account limits --json`. */
export interface AccountLimits {
  pending_sender_ids: number;
  document_bytes: number;
  /** Messages per UTC day; null: no cap. */
  daily_messages: number | null;
  /** Calling codes the account may send to, narrowing ALLOWED_COUNTRIES; null: no narrowing. */
  countries: string[] | null;
}

export interface AccountLimitsView {
  id: string;
  origin: AccountOrigin;
  limits: AccountLimits;
  /** Which of the two quotas the account overrides (otherwise it follows the installation). */
  overridden: { pending_sender_ids: boolean; document_bytes: boolean };
  usage: { pending_sender_ids: number; document_bytes: number; messages_today: number };
  /** ALLOWED_COUNTRIES of this process; null: every country. */
  installation_countries: string[] | null;
}

function splitCodes(raw: string | null): string[] | null {
  return raw === null ? null : raw.split(',').filter(Boolean);
}

export function pendingSenderIdLimit(config: Config, row: Pick<AccountLimitsRow, 'pending_sender_id_limit'>): number {
  return row.pending_sender_id_limit ?? config.limits.senderIdPendingMax;
}

export function documentQuota(config: Config, row: Pick<AccountLimitsRow, 'document_quota_bytes'>): number {
  return row.document_quota_bytes ?? config.limits.documentQuotaBytes;
}

export async function getAccountLimits(ctx: Context, accountId: string): Promise<AccountLimitsView> {
  const row = await accountLimitsRow(ctx.store.db, accountId);
  if (!row) throw new AppError('not_found', `No account ${accountId}.`);
  return {
    id: row.id,
    origin: row.origin,
    limits: {
      pending_sender_ids: pendingSenderIdLimit(ctx.config, row),
      document_bytes: documentQuota(ctx.config, row),
      daily_messages: row.daily_message_limit,
      countries: splitCodes(row.allowed_countries),
    },
    overridden: { pending_sender_ids: row.pending_sender_id_limit !== null, document_bytes: row.document_quota_bytes !== null },
    usage: {
      pending_sender_ids: await countPendingSenderIds(ctx.store.db, accountId),
      document_bytes: await storedDocumentBytes(ctx.store.db, accountId),
      messages_today: row.daily_day === utcDay(ctx.clock()) ? row.daily_count : 0,
    },
    installation_countries: ctx.config.limits.allowedCountries,
  };
}

/** A change of limits; absent fields stay as they are. */
export interface LimitsChange {
  pendingSenderIds?: number;
  documentBytes?: number;
  /** null lifts the cap. */
  dailyMessages?: number | null;
  /** Comma-separated calling codes (`44,33`), or null for every country the installation allows. */
  countries?: string | null;
}

function wholeNumber(value: number, what: string, max = Number.MAX_SAFE_INTEGER): number {
  if (!Number.isSafeInteger(value) || value < 0 || value > max) throw new AppError('invalid_request', `${what} must be a whole number from 0 to ${max.toLocaleString('en')}.`);
  return value;
}

/**
 * Sets an account's limits. Every process applies them to its next request: the quotas and the
 * daily cap are read in the transactions that enforce them, and a new country list moves the
 * access revision (a trigger of migration 009), which empties every process's access cache.
 */
export async function setAccountLimits(ctx: Context, accountId: string, change: LimitsChange): Promise<AccountLimitsView> {
  const patch: LimitsPatch = {};
  if (change.pendingSenderIds !== undefined) patch.pending_sender_id_limit = wholeNumber(change.pendingSenderIds, 'The pending Sender ID quota', 1_000_000);
  if (change.documentBytes !== undefined) patch.document_quota_bytes = wholeNumber(change.documentBytes, 'The document quota');
  if (change.dailyMessages !== undefined) {
    patch.daily_message_limit = change.dailyMessages === null ? null : wholeNumber(change.dailyMessages, 'The daily message limit', 1_000_000_000);
  }
  if (change.countries !== undefined) {
    if (change.countries === null) patch.allowed_countries = null;
    else {
      const parsed = parseCallingCodes(change.countries);
      if (!parsed.ok) throw new AppError('invalid_request', `The countries must be comma-separated calling codes such as 44,33: ${parsed.reason}`);
      patch.allowed_countries = parsed.codes.join(',');
    }
  }
  await ctx.store.db.transaction().execute(async (trx) => {
    const before = await findAccount(trx, accountId);
    if (!before || !(await updateAccountLimits(trx, accountId, patch))) throw new AppError('not_found', `No account ${accountId}.`);
    const was: Record<string, unknown> = {};
    for (const field of Object.keys(patch)) was[field] = before[field as keyof typeof before] ?? null;
    const changes = changesBetween(was, { ...was, ...patch });
    if (Object.keys(changes).length > 0) await recordAudit(ctx, { action: 'account.limits_changed', accountId, target: { type: 'account', id: accountId }, changes }, trx);
  });
  return getAccountLimits(ctx, accountId);
}

// ---- Quotas -------------------------------------------------------------------------------

export function pendingSenderIdQuotaExceeded(used: number, limit: number): AppError {
  return new AppError(
    'quota_exceeded',
    `Pending Sender ID quota reached: ${used.toLocaleString('en')} of ${limit.toLocaleString('en')} pending Sender IDs. Wait for the operator's review of the pending ones, or ask the operator for a higher quota.`,
  );
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

export function documentQuotaExceeded(stored: number, adding: number, limit: number): AppError {
  return new AppError(
    'quota_exceeded',
    `Document storage quota reached: ${mib(stored)} of ${mib(limit)} stored; these documents add ${mib(adding)}. Ask the operator for a higher quota.`,
  );
}

// ---- Daily cap ----------------------------------------------------------------------------

export function dailyLimitReached(limit: number, counted: number, messages: number, now: number): AppError {
  const retryAfter = String(Math.max(1, Math.ceil(((utcDay(now) + 1) * DAY_MS - now) / 1000)));
  return new AppError(
    'daily_limit_reached',
    `Daily message limit reached: ${counted.toLocaleString('en')} of ${limit.toLocaleString('en')} messages sent today (UTC); this request has ${messages.toLocaleString('en')}. Nothing was sent; the count starts again at 00:00 UTC, or the operator can lift the limit.`,
    { headers: { 'Retry-After': retryAfter } },
  );
}

// ---- Destinations -------------------------------------------------------------------------

/** Why a recipient may not be sent to, or null; null rule: every destination is allowed. */
export type DestinationRule = ((e164: string) => string | null) | null;

/** ALLOWED_COUNTRIES as a set, made once per configuration rather than per send. */
const installationSets = new WeakMap<string[], ReadonlySet<string>>();

function ruleOf(installation: string[] | null, account: string | null): DestinationRule {
  if (installation === null && account === null) return null;
  let inst: ReadonlySet<string> | null = null;
  if (installation) {
    inst = installationSets.get(installation) ?? new Set(installation);
    installationSets.set(installation, inst);
  }
  const own = account === null ? null : new Set(account.split(',').filter(Boolean));
  return (e164) => {
    const code = callingCodeOf(e164);
    if (inst && (code === null || !inst.has(code))) return `This installation does not send to +${code ?? '?'} numbers.`;
    if (own && (code === null || !own.has(code))) return `This account may not send to +${code ?? '?'} numbers.`;
    return null;
  };
}

async function cachedAllowedCountries(ctx: Context, snapshot: AccessSnapshot, accountId: string): Promise<string | null> {
  return snapshot.get('countries', accountId, async () => (await allowedCountriesRow(ctx.store, accountId))?.allowed_countries ?? null);
}

/**
 * The destination rule of an account: ALLOWED_COUNTRIES, narrowed by the account's own list. The
 * account's list is cached per access revision like keys and Sender IDs; `access` is the snapshot
 * the request was authenticated with, when there is one.
 */
export async function destinationRule(ctx: Context, accountId: string, access?: AccessSnapshot): Promise<DestinationRule> {
  const own = await cachedAllowedCountries(ctx, access ?? (await accessSnapshot(ctx.store)), accountId);
  return ruleOf(ctx.config.limits.allowedCountries, own);
}

export function destinationNotAllowed(reason: string): AppError {
  return new AppError('destination_not_allowed', reason);
}

/**
 * Whether all these recipients may still be sent to, with the account's list read inside the
 * caller's transaction (once per account for all the acceptances of one commit: `memo`).
 */
export async function destinationRefusalNow(
  db: Executor,
  config: Config,
  accountId: string,
  recipients: readonly string[],
  memo: Map<string, string | null> = new Map(),
): Promise<AppError | null> {
  if (!memo.has(accountId)) memo.set(accountId, (await allowedCountriesNow(db, accountId)) ?? null);
  const rule = ruleOf(config.limits.allowedCountries, memo.get(accountId)!);
  if (!rule) return null;
  for (const e164 of recipients) {
    const reason = rule(e164);
    if (reason) return destinationNotAllowed(reason);
  }
  return null;
}
