/**
 * Account owners: the people who sign in to the dashboard for an account. Signing up creates the
 * account (active, 0 credits) and its owner; operators log in through the same checks.
 */
import { AppError } from '../../errors/catalogue.ts';
import type { OwnersTable } from '../../store/database.ts';
import { deleteAccount, findAccount } from '../../store/repositories/accounts.repository.ts';
import { findOperatorByEmail, findOperatorById } from '../../store/repositories/operators.repository.ts';
import { findOwnerByEmail, findOwnerById, insertOwner, setOwnerPasswordHash } from '../../store/repositories/owners.repository.ts';
import { newId } from '../../util/ids.ts';
import { createAccount, type Account } from '../accounts/accounts.ts';
import { recordAudit } from '../audit/audit.ts';
import type { Context } from '../context.ts';
import { cancelLoginAttempt, releaseLoginAttempt, reserveLoginAttempt } from './login-throttle.ts';
import { MIN_PASSWORD_LENGTH, type Operator } from './operators.ts';
import { countPerHour, mailSignupAttempt, sendVerificationLink, uncountPerHour } from './owner-links.ts';
import { hashPassword, verifyPassword } from './passwords.ts';
import { endOtherSessions } from './sessions.ts';
import { isUniqueViolation } from '../../store/dialect.ts';

/** Longer than any sane passphrase, short enough that hashing it costs nothing extra. */
const MAX_PASSWORD_LENGTH = 1024;

/** The longest address SMTP can carry (RFC 5321's 256-octet path, less the angle brackets). */
export const MAX_EMAIL_LENGTH = 254;
export const MAX_ACCOUNT_NAME_LENGTH = 100;

/**
 * The "valid e-mail address" of the HTML standard (what `<input type=email>` accepts): no
 * display names, comments or quoted local parts, so `x<owner@corp>` is refused.
 */
const WHATWG_EMAIL = /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/;

export function normaliseEmail(email: string): string {
  const normalised = email.trim().toLowerCase();
  if (normalised.length > MAX_EMAIL_LENGTH) throw new AppError('invalid_request', `An e-mail address has at most ${MAX_EMAIL_LENGTH} characters.`);
  if (!WHATWG_EMAIL.test(normalised)) throw new AppError('invalid_request', `Not an e-mail address: ${email}`);
  return normalised;
}

function checkAccountName(name: string): string {
  const trimmed = name.trim();
  if (trimmed === '') throw new AppError('invalid_request', 'Give the company or project name.');
  if (trimmed.length > MAX_ACCOUNT_NAME_LENGTH) throw new AppError('invalid_request', `A name has at most ${MAX_ACCOUNT_NAME_LENGTH} characters.`);
  return trimmed;
}

export function checkNewPassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH) throw new AppError('invalid_request', `A password has at least ${MIN_PASSWORD_LENGTH} characters.`);
  if (password.length > MAX_PASSWORD_LENGTH) throw new AppError('invalid_request', `A password has at most ${MAX_PASSWORD_LENGTH} characters.`);
}

/** A person who signs in to the dashboard for an account, as pages see them. */
export type Owner = OwnersTable;

export interface OwnerWithAccount {
  owner: Owner;
  account: Account;
}

/**
 * What a sign-up answers: `created` (SIGNUP=open: log in now), or `check_email` (SIGNUP=verify:
 * the same answer whether the address was free or already had an owner, who is mailed instead).
 */
export type SignUpResult = ({ outcome: 'created' } & OwnerWithAccount) | { outcome: 'check_email'; email: string };

export async function signUpOwner(ctx: Context, input: { name: string; email: string; password: string }, ip: string): Promise<SignUpResult> {
  const mode = ctx.config.signup.mode;
  if (mode === 'closed') throw new AppError('signup_closed');
  const name = checkAccountName(input.name);
  const email = normaliseEmail(input.email);
  checkNewPassword(input.password);
  // Counted before the lookup and the hash, so parallel sign-ups cannot race past the limit.
  const counter = `signup|${ip}`;
  await countPerHour(ctx, counter, ctx.config.signup.maxPerHour, 'Too many sign-ups from this address; try again later.');
  const taken = await findOwnerByEmail(ctx.store.db, email);
  if (taken && mode === 'open') throw new AppError('email_taken');
  // Hashed even for a taken address, so that the answer takes as long either way.
  let passwordHash: string;
  try {
    passwordHash = await hashPassword(input.password);
  } catch (err) {
    // Refused by a full hashing pool: nothing was made, so the try does not use up the hour's allowance.
    await uncountPerHour(ctx, counter);
    throw err;
  }
  if (taken) {
    await mailSignupAttempt(ctx, taken);
    return { outcome: 'check_email', email };
  }
  // A sign-up can come from anyone: its account starts with the daily cap for new accounts.
  const account = await createAccount(ctx, { name, email, credits: 0, origin: 'signup', dailyMessageLimit: ctx.config.limits.newAccountDailyLimit });
  const now = ctx.clock();
  const owner: OwnersTable = {
    id: newId('own', now),
    account_id: account.id,
    email,
    password_hash: passwordHash,
    created_at: now,
    email_verified_at: mode === 'open' ? now : null,
  };
  try {
    await insertOwner(ctx.store.db, owner);
  } catch (err) {
    // Two sign-ups raced for the address: the loser's fresh, empty account goes away again.
    await deleteAccount(ctx.store.db, account.id);
    if (!isUniqueViolation(err)) throw err;
    if (mode === 'open') throw new AppError('email_taken');
    const winner = await findOwnerByEmail(ctx.store.db, email);
    if (winner) await mailSignupAttempt(ctx, winner);
    return { outcome: 'check_email', email };
  }
  await recordAudit(ctx, {
    action: 'member.signed_up',
    accountId: account.id,
    target: { type: 'account', id: account.id },
    actor: { type: 'member', id: owner.id, email },
    ip,
    changes: { name: [null, name], email: [null, email] },
  });
  if (mode === 'verify') {
    await sendVerificationLink(ctx, owner);
    return { outcome: 'check_email', email };
  }
  return { outcome: 'created', owner, account };
}

/** SIGNUP=verify: keys and Sender IDs wait until the owner has confirmed the address. */
export function assertOwnerVerified(owner: OwnersTable): void {
  if (owner.email_verified_at == null) throw new AppError('email_not_verified');
}

/**
 * Some hash to check a password against when the e-mail is unknown, so that an unknown address
 * takes as long to refuse as a wrong password.
 */
let decoyHash: Promise<string> | null = null;

async function checkLogin<T extends { password_hash: string }>(
  ctx: Context,
  scope: 'owner' | 'operator',
  row: T | undefined,
  email: string,
  password: string,
  ip: string,
): Promise<T> {
  const attempt = await reserveLoginAttempt(ctx, scope, email, ip);
  let ok: boolean;
  try {
    ok = row
      ? await verifyPassword(password.slice(0, MAX_PASSWORD_LENGTH), row.password_hash)
      : (await verifyPassword(password.slice(0, MAX_PASSWORD_LENGTH), await (decoyHash ??= hashPassword('decoy password'))), false);
  } catch (err) {
    // The password was never checked (the hashing pool was full): the attempt does not count.
    await cancelLoginAttempt(ctx, attempt);
    if (!row) decoyHash = null;
    throw err;
  }
  if (!row || !ok) throw new AppError('invalid_credentials');
  await releaseLoginAttempt(ctx, attempt);
  return row;
}

/** Checks an owner's e-mail and password (with the lockout); `ip` is the client's address. */
export async function logInOwner(ctx: Context, email: string, password: string, ip: string): Promise<OwnersTable> {
  const normalised = email.trim().toLowerCase();
  // No account has a longer address; the lockout's key is cut to that length so it stays small.
  const row = normalised.length > MAX_EMAIL_LENGTH ? undefined : await findOwnerByEmail(ctx.store.db, normalised);
  return recordSignIn(ctx, 'member', row, normalised.slice(0, MAX_EMAIL_LENGTH), ip, () => checkLogin(ctx, 'owner', row, normalised.slice(0, MAX_EMAIL_LENGTH), password, ip));
}

/**
 * Records a sign-in, succeeded or refused (wrong password, unknown address, locked), in the audit
 * log; an unknown address is recorded with the address tried and no account.
 */
async function recordSignIn<T extends { id: string; account_id?: string }>(
  ctx: Context,
  type: 'member' | 'operator',
  row: T | undefined,
  email: string,
  ip: string,
  check: () => Promise<T>,
): Promise<T> {
  const actor = { type, id: row?.id ?? null, email };
  const accountId = row?.account_id ?? null;
  const target = row ? { type: type === 'member' ? 'owner' : 'operator', id: row.id } : null;
  try {
    const signedIn = await check();
    await recordAudit(ctx, { action: type === 'member' ? 'member.signed_in' : 'operator.signed_in', accountId, target, actor, ip });
    return signedIn;
  } catch (err) {
    if (err instanceof AppError && (err.code === 'invalid_credentials' || err.code === 'login_locked')) {
      await recordAudit(ctx, { action: type === 'member' ? 'member.sign_in_failed' : 'operator.sign_in_failed', accountId, target, actor, ip, changes: { reason: [null, err.code] } });
    }
    throw err;
  }
}

export async function logInOperator(ctx: Context, email: string, password: string, ip: string): Promise<Operator> {
  const normalised = email.trim().toLowerCase();
  const row = normalised.length > MAX_EMAIL_LENGTH ? undefined : await findOperatorByEmail(ctx.store.db, normalised);
  return recordSignIn(ctx, 'operator', row, normalised.slice(0, MAX_EMAIL_LENGTH), ip, () => checkLogin(ctx, 'operator', row, normalised.slice(0, MAX_EMAIL_LENGTH), password, ip));
}

export async function getOwnerWithAccount(ctx: Context, ownerId: string): Promise<OwnerWithAccount | null> {
  const owner = await findOwnerById(ctx.store.db, ownerId);
  if (!owner) return null;
  const account = await findAccount(ctx.store.db, owner.account_id);
  if (!account) throw new Error(`owner ${ownerId} has no account ${owner.account_id}`);
  return { owner, account };
}

export async function getOperator(ctx: Context, operatorId: string): Promise<Operator | null> {
  return (await findOperatorById(ctx.store.db, operatorId)) ?? null;
}

/**
 * Changes a password after checking the current one, under the same lockout as logins (the same
 * e-mail and address keys: a stolen session cannot guess the password faster than the login
 * form can), and ends every other session of the owner.
 */
export async function changeOwnerPassword(ctx: Context, ownerId: string, current: string, next: string, ip: string, keepSessionId: string): Promise<void> {
  const owner = await findOwnerById(ctx.store.db, ownerId);
  if (!owner) throw new AppError('not_found', 'No such owner.');
  checkNewPassword(next);
  const attempt = await reserveLoginAttempt(ctx, 'owner', owner.email, ip);
  let ok: boolean;
  try {
    ok = await verifyPassword(current.slice(0, MAX_PASSWORD_LENGTH), owner.password_hash);
  } catch (err) {
    await cancelLoginAttempt(ctx, attempt);
    throw err;
  }
  if (!ok) throw new AppError('invalid_credentials', 'The current password is wrong.');
  await releaseLoginAttempt(ctx, attempt);
  const hash = await hashPassword(next);
  await ctx.store.db.transaction().execute(async (trx) => {
    await setOwnerPasswordHash(trx, ownerId, hash);
    await recordAudit(ctx, { action: 'member.password_changed', accountId: owner.account_id, target: { type: 'owner', id: ownerId }, changes: { password: ['set', 'changed'] } }, trx);
  });
  await endOtherSessions(ctx, 'owner', ownerId, keepSessionId);
}
