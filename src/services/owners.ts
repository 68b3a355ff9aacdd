/**
 * Account owners: the people who sign in to the dashboard for an account. Signing up creates the
 * account (active, 0 credits) and its owner; operators log in through the same checks.
 */
import { AppError } from '../errors/catalogue.ts';
import type { AccountsTable, OperatorsTable, OwnersTable } from '../store/database.ts';
import { newId } from '../util/ids.ts';
import { createAccount } from './accounts.ts';
import type { Context } from './context.ts';
import { assertNotLocked, clearLoginFailures, recordLoginFailure } from './login-throttle.ts';
import { MIN_PASSWORD_LENGTH } from './operators.ts';
import { hashPassword, verifyPassword } from './passwords.ts';

/** Longer than any sane passphrase, short enough that hashing it costs nothing extra. */
const MAX_PASSWORD_LENGTH = 1024;

function normaliseEmail(email: string): string {
  const normalised = email.trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(normalised) || normalised.length > 254) {
    throw new AppError('invalid_request', `Not an e-mail address: ${email}`);
  }
  return normalised;
}

function checkNewPassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH) throw new AppError('invalid_request', `A password has at least ${MIN_PASSWORD_LENGTH} characters.`);
  if (password.length > MAX_PASSWORD_LENGTH) throw new AppError('invalid_request', `A password has at most ${MAX_PASSWORD_LENGTH} characters.`);
}

function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: string })?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE';
}

export interface OwnerWithAccount {
  owner: OwnersTable;
  account: AccountsTable;
}

export async function signUpOwner(ctx: Context, input: { name: string; email: string; password: string }): Promise<OwnerWithAccount> {
  const email = normaliseEmail(input.email);
  checkNewPassword(input.password);
  const taken = await ctx.store.db.selectFrom('owners').select('id').where('email', '=', email).executeTakeFirst();
  if (taken) throw new AppError('email_taken');
  const passwordHash = await hashPassword(input.password);
  // A sign-up can come from anyone: its account starts with the daily cap for new accounts.
  const account = await createAccount(ctx, { name: input.name, email, credits: 0, origin: 'signup', dailyMessageLimit: ctx.config.limits.newAccountDailyLimit });
  const now = ctx.clock();
  const owner: OwnersTable = { id: newId('own', now), account_id: account.id, email, password_hash: passwordHash, created_at: now };
  try {
    await ctx.store.db.insertInto('owners').values(owner).execute();
  } catch (err) {
    // Two sign-ups raced for the address: the loser's fresh, empty account goes away again.
    await ctx.store.db.deleteFrom('accounts').where('id', '=', account.id).execute();
    if (isUniqueViolation(err)) throw new AppError('email_taken');
    throw err;
  }
  return { owner, account };
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
  await assertNotLocked(ctx, scope, email, ip);
  const ok = row
    ? await verifyPassword(password.slice(0, MAX_PASSWORD_LENGTH), row.password_hash)
    : (await verifyPassword(password.slice(0, MAX_PASSWORD_LENGTH), await (decoyHash ??= hashPassword('decoy password'))), false);
  if (!row || !ok) {
    await recordLoginFailure(ctx, scope, email, ip);
    throw new AppError('invalid_credentials');
  }
  await clearLoginFailures(ctx, scope, email, ip);
  return row;
}

/** Checks an owner's e-mail and password (with the lockout); `ip` is the client's address. */
export async function logInOwner(ctx: Context, email: string, password: string, ip: string): Promise<OwnersTable> {
  const normalised = email.trim().toLowerCase();
  const row = await ctx.store.db.selectFrom('owners').selectAll().where('email', '=', normalised).executeTakeFirst();
  return checkLogin(ctx, 'owner', row, normalised, password, ip);
}

export async function logInOperator(ctx: Context, email: string, password: string, ip: string): Promise<OperatorsTable> {
  const normalised = email.trim().toLowerCase();
  const row = await ctx.store.db.selectFrom('operators').selectAll().where('email', '=', normalised).executeTakeFirst();
  return checkLogin(ctx, 'operator', row, normalised, password, ip);
}

export async function getOwnerWithAccount(ctx: Context, ownerId: string): Promise<OwnerWithAccount | null> {
  const owner = await ctx.store.db.selectFrom('owners').selectAll().where('id', '=', ownerId).executeTakeFirst();
  if (!owner) return null;
  const account = await ctx.store.db.selectFrom('accounts').selectAll().where('id', '=', owner.account_id).executeTakeFirstOrThrow();
  return { owner, account };
}

export async function getOperator(ctx: Context, operatorId: string): Promise<OperatorsTable | null> {
  return (await ctx.store.db.selectFrom('operators').selectAll().where('id', '=', operatorId).executeTakeFirst()) ?? null;
}

/** The addresses to notify about an account: its owners', or the account's contact address. */
export async function accountEmails(ctx: Context, accountId: string): Promise<string[]> {
  const owners = await ctx.store.db.selectFrom('owners').select('email').where('account_id', '=', accountId).execute();
  if (owners.length > 0) return owners.map((o) => o.email);
  const account = await ctx.store.db.selectFrom('accounts').select('email').where('id', '=', accountId).executeTakeFirst();
  return account ? [account.email] : [];
}

export async function changeOwnerPassword(ctx: Context, ownerId: string, current: string, next: string): Promise<void> {
  const owner = await ctx.store.db.selectFrom('owners').selectAll().where('id', '=', ownerId).executeTakeFirst();
  if (!owner) throw new AppError('not_found', 'No such owner.');
  if (!(await verifyPassword(current.slice(0, MAX_PASSWORD_LENGTH), owner.password_hash))) {
    throw new AppError('invalid_credentials', 'The current password is wrong.');
  }
  checkNewPassword(next);
  await ctx.store.db.updateTable('owners').set({ password_hash: await hashPassword(next) }).where('id', '=', ownerId).execute();
}
