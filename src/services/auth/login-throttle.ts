/**
 * Lockout after repeated failed password checks, counted in the database (so that every process
 * of an installation counts together), on two keys:
 * - the e-mail and client address together: five failures within fifteen minutes lock that pair
 *   out for fifteen minutes, and each further lockout in a row lasts twice as long (up to a day);
 *   a successful login clears it;
 * - the client address alone, across e-mails: twenty failures within fifteen minutes lock the
 *   address out the same way, so that one client cannot try passwords on many accounts (nor make
 *   the server compute a password hash per try) by changing the e-mail.
 *
 * An attempt is counted as a failure before its password is checked (`reserveLoginAttempt`) and
 * given back when the password was right (`releaseLoginAttempt`). Counting after the slow hash
 * would let parallel guesses all read "not locked" before any of them was written down.
 */
import { AppError } from '../../errors/catalogue.ts';
import type { LoginThrottleTable } from '../../store/database.ts';
import { latestLockout, updateThrottleRow } from '../../store/repositories/login-throttle.repository.ts';
import type { Context } from '../context.ts';

export const MAX_LOGIN_FAILURES = 5;
export const MAX_ADDRESS_FAILURES = 20;
export const LOGIN_WINDOW_MS = 15 * 60 * 1000;
export const LOCKOUT_MS = 15 * 60 * 1000;
export const MAX_LOCKOUT_MS = 24 * 60 * 60 * 1000;

function pairKey(scope: string, email: string, ip: string): string {
  return `${scope}|${email.trim().toLowerCase()}|${ip}`;
}

function addressKey(scope: string, ip: string): string {
  return `${scope}|*|${ip}`;
}

function lockedError(until: number, now: number): AppError {
  const seconds = Math.max(1, Math.ceil((until - now) / 1000));
  return new AppError('login_locked', `Too many failed logins; try again in ${Math.ceil(seconds / 60)} minutes.`, { headers: { 'retry-after': String(seconds) } });
}

/** Throws `login_locked` while the pair, or the client address, is locked out. */
export async function assertNotLocked(ctx: Context, scope: string, email: string, ip: string): Promise<void> {
  const until = await latestLockout(ctx.store, [pairKey(scope, email, ip), addressKey(scope, ip)]);
  const now = ctx.clock();
  if (until > now) throw lockedError(until, now);
}

/** What one reservation did to one key, so that it can be given back exactly. */
interface Counted {
  key: string;
  windowStartedAt: number;
  /** This attempt was the one that reached the limit and locked the key. */
  locked: boolean;
  lockedUntilBefore: number | null;
}

type CountResult = { counted: Counted } | { lockedUntil: number };

/** Counts one attempt on `key`; counts nothing and says until when when the key is locked. */
async function count(ctx: Context, key: string, max: number, now: number): Promise<CountResult> {
  return updateThrottleRow<CountResult>(ctx.store, key, (row) => {
    const lockedUntil = row?.locked_until == null ? 0 : Number(row.locked_until);
    if (row && lockedUntil > now) return { next: strip(row), result: { lockedUntil } };
    const fresh = !row || now - Number(row.window_started_at) > LOGIN_WINDOW_MS;
    const windowStartedAt = fresh ? now : Number(row.window_started_at);
    const failures = fresh ? 1 : row.failures + 1;
    const lockouts = row?.lockouts ?? 0;
    const locks = failures >= max;
    const next = {
      failures: locks ? 0 : failures,
      window_started_at: windowStartedAt,
      locked_until: locks ? now + Math.min(MAX_LOCKOUT_MS, LOCKOUT_MS * 2 ** lockouts) : (row?.locked_until ?? null),
      lockouts: locks ? lockouts + 1 : lockouts,
    };
    return { next, result: { counted: { key, windowStartedAt, locked: locks, lockedUntilBefore: row?.locked_until == null ? null : Number(row.locked_until) } } };
  });
}

function strip(row: LoginThrottleTable): Omit<LoginThrottleTable, 'key'> {
  return { failures: row.failures, window_started_at: Number(row.window_started_at), locked_until: row.locked_until, lockouts: row.lockouts };
}

/** Takes one counted attempt back off a key (the password was right, or the attempt never ran). */
async function giveBack(ctx: Context, counted: Counted, max: number): Promise<void> {
  await updateThrottleRow(ctx.store, counted.key, (row) => {
    if (!row) return { next: null, result: undefined };
    if (counted.locked && row.lockouts > 0) {
      // This attempt locked the key: undo the lockout it caused, leaving the failures before it.
      return { next: { ...strip(row), failures: max - 1, locked_until: counted.lockedUntilBefore, lockouts: row.lockouts - 1 }, result: undefined };
    }
    if (Number(row.window_started_at) !== counted.windowStartedAt || row.failures === 0) return { next: strip(row), result: undefined };
    return { next: { ...strip(row), failures: row.failures - 1 }, result: undefined };
  });
}

export interface LoginAttempt {
  pair: Counted;
  address: Counted;
}

/**
 * Counts a password check as failed before it runs; throws `login_locked` (counting nothing)
 * when the pair or the address is locked out. Call `releaseLoginAttempt` when the password was right.
 */
export async function reserveLoginAttempt(ctx: Context, scope: string, email: string, ip: string): Promise<LoginAttempt> {
  const now = ctx.clock();
  await assertNotLocked(ctx, scope, email, ip);
  const address = await count(ctx, addressKey(scope, ip), MAX_ADDRESS_FAILURES, now);
  if ('lockedUntil' in address) throw lockedError(address.lockedUntil, now);
  const pair = await count(ctx, pairKey(scope, email, ip), MAX_LOGIN_FAILURES, now);
  if ('lockedUntil' in pair) {
    await giveBack(ctx, address.counted, MAX_ADDRESS_FAILURES);
    throw lockedError(pair.lockedUntil, now);
  }
  return { pair: pair.counted, address: address.counted };
}

/** The password was right: the pair's count and backoff are cleared, the address gets its try back. */
export async function releaseLoginAttempt(ctx: Context, attempt: LoginAttempt): Promise<void> {
  await updateThrottleRow(ctx.store, attempt.pair.key, () => ({ next: null, result: undefined }));
  await giveBack(ctx, attempt.address, MAX_ADDRESS_FAILURES);
}

/** The password was never checked (the hashing pool refused it): the attempt is given back. */
export async function cancelLoginAttempt(ctx: Context, attempt: LoginAttempt): Promise<void> {
  await giveBack(ctx, attempt.pair, MAX_LOGIN_FAILURES);
  await giveBack(ctx, attempt.address, MAX_ADDRESS_FAILURES);
}

/** Counts one failed password check (an attempt reserved and not released). */
export async function recordLoginFailure(ctx: Context, scope: string, email: string, ip: string): Promise<void> {
  const now = ctx.clock();
  await count(ctx, pairKey(scope, email, ip), MAX_LOGIN_FAILURES, now);
  await count(ctx, addressKey(scope, ip), MAX_ADDRESS_FAILURES, now);
}

/** A successful login clears the pair's count and its backoff (the address keeps its count). */
export async function clearLoginFailures(ctx: Context, scope: string, email: string, ip: string): Promise<void> {
  await updateThrottleRow(ctx.store, pairKey(scope, email, ip), () => ({ next: null, result: undefined }));
}
