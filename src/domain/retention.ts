/**
 * Retention (DECISIONS.md §13): how long an account's data is kept, and what a purged message
 * still counts for. Pure rules; the purge itself is src/services/retention/purge.ts.
 */
import { callingCodeOf } from './calling-codes.ts';
import type { MessageStatus } from './message-status.ts';

export const DAY_MS = 24 * 60 * 60 * 1000;

/** Days each kind of data is kept. `maskNumbersDays` null: numbers are never masked. */
export interface RetentionDays {
  bodyDays: number;
  messageDays: number;
  maskNumbersDays: number | null;
}

/** The installation's RETENTION_* settings (0 mask days: never). */
export interface InstallationRetention {
  bodyDays: number;
  messageDays: number;
  maskNumbersDays: number;
}

/** An account's own settings; null follows the installation. */
export interface AccountRetention {
  bodyDays: number | null;
  messageDays: number | null;
  maskNumbersDays: number | null;
}

/**
 * What applies to an account: its own setting where it has one, but never longer than the
 * installation's (an operator who shortens the installation's default shortens every account's).
 */
export function effectiveRetention(installation: InstallationRetention, account: AccountRetention): RetentionDays {
  const installMask = installation.maskNumbersDays === 0 ? null : installation.maskNumbersDays;
  const shorter = (own: number | null, all: number | null) => (own === null ? all : all === null ? own : Math.min(own, all));
  return {
    bodyDays: shorter(account.bodyDays, installation.bodyDays) as number,
    messageDays: shorter(account.messageDays, installation.messageDays) as number,
    maskNumbersDays: shorter(account.maskNumbersDays, installMask),
  };
}

/**
 * Why an account's new setting is refused, or null. An account may only keep less than the
 * installation: the installation's figures are what its operator has promised (docs/privacy.md),
 * and a longer one would be silently cut back by `effectiveRetention` anyway.
 */
export function retentionRefusal(installation: InstallationRetention, change: Partial<AccountRetention>): string | null {
  const check = (value: number | null | undefined, limit: number, flag: string, variable: string): string | null =>
    value !== undefined && value !== null && value > limit ? `${flag} ${value} is longer than the installation's ${variable} (${limit} days): an account may only be set shorter.` : null;
  return (
    check(change.bodyDays, installation.bodyDays, '--body-days', 'RETENTION_BODY_DAYS') ??
    check(change.messageDays, installation.messageDays, '--message-days', 'RETENTION_MESSAGE_DAYS') ??
    (installation.maskNumbersDays === 0 ? null : check(change.maskNumbersDays, installation.maskNumbersDays, '--mask-numbers-days', 'RETENTION_MASK_NUMBERS_DAYS'))
  );
}

/** The time before which data kept `days` days is due at `now`: 0 days means everything before now. */
export function cutoff(now: number, days: number): number {
  return now - days * DAY_MS;
}

/** The UTC day of a timestamp, days since 1970-01-01. */
export function utcDayOf(ms: number): number {
  return Math.floor(ms / DAY_MS);
}

/** The destination a message counts for in the daily totals: its calling code, '' if none is known. */
export function destinationOf(recipient: string): string {
  return callingCodeOf(recipient) ?? '';
}

/** What a final message cost in the end, as the ledger has it. */
export interface CostedMessage {
  status: MessageStatus;
  segments: number;
  /** 0 for a free message (an opt-out confirmation). */
  charged?: number | null;
  /** What it was charged at acceptance (segments × its price, migration 022); null before prices: its segments. */
  credits?: number | null;
  sent_at: number | null;
}

/**
 * Credits a final message kept: what it was charged, unless it was free, canceled (refunded) or
 * failed before it was ever sent (refunded: message-status-changes.ts). A message that failed
 * after it left keeps its charge.
 */
export function creditsKept(m: CostedMessage): number {
  if (m.charged === 0) return 0;
  if (m.status === 'canceled') return 0;
  if (m.status === 'failed' && m.sent_at === null) return 0;
  return m.credits ?? m.segments;
}

export interface DailyTotal {
  accountId: string;
  day: number;
  country: string;
  status: MessageStatus;
  messages: number;
  segments: number;
  credits: number;
}

/** Messages about to be deleted, summed per account, day, destination and status. */
export function totalsOf(messages: readonly (CostedMessage & { account_id: string; created_at: number; recipient: string })[]): DailyTotal[] {
  const out = new Map<string, DailyTotal>();
  for (const m of messages) {
    const day = utcDayOf(m.created_at);
    const country = destinationOf(m.recipient);
    const key = `${m.account_id}|${day}|${country}|${m.status}`;
    let t = out.get(key);
    if (!t) {
      t = { accountId: m.account_id, day, country, status: m.status, messages: 0, segments: 0, credits: 0 };
      out.set(key, t);
    }
    t.messages += 1;
    t.segments += m.segments;
    t.credits += creditsKept(m);
  }
  return [...out.values()];
}
