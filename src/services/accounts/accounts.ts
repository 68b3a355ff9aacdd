/**
 * Accounts and their credits, as the operator manages them (command line, operator dashboard).
 */
import { randomBytes } from 'node:crypto';
import { AppError } from '../../errors/catalogue.ts';
import type { AccountOrigin, AccountsTable, AccountStatus } from '../../store/database.ts';
import * as accounts from '../../store/repositories/accounts.repository.ts';
import { creditCredits, ledgerSum } from '../../store/repositories/ledger.repository.ts';
import { newId } from '../../util/ids.ts';
import { recordAudit } from '../audit/audit.ts';
import type { Context } from '../context.ts';

/** How long the secret before a rotation keeps signing beside the new one. */
/** An account as the services hand it to pages and commands. */
export type Account = AccountsTable;
export type { AccountOrigin, AccountStatus };

export const WEBHOOK_SECRET_OVERLAP_MS = 24 * 60 * 60 * 1000;

export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64url')}`;
}

export async function createAccount(
  ctx: Context,
  input: {
    name: string;
    email: string;
    credits?: number;
    /** Who makes the account (default: the operator); sign-up passes `signup`. */
    origin?: AccountOrigin;
    /** Messages per UTC day; null or absent: no cap. */
    dailyMessageLimit?: number | null;
  },
): Promise<AccountsTable> {
  const name = input.name.trim();
  const email = input.email.trim();
  if (!name) throw new AppError('invalid_request', 'An account needs a name.');
  if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw new AppError('invalid_request', `Not an e-mail address: ${email}`);
  const credits = input.credits ?? 0;
  if (!Number.isSafeInteger(credits) || credits < 0) throw new AppError('invalid_request', 'Credits must be a whole number, 0 or more.');
  // One account per e-mail address (any case): a second would split one customer's keys, credits
  // and mail, and the dashboard's sign-up relies on the same rule.
  if (await accounts.accountIdByEmail(ctx.store.db, email)) throw new AppError('email_taken', `An account with the e-mail address ${email} already exists.`);
  const now = ctx.clock();
  const account: AccountsTable = {
    id: newId('acc', now),
    name,
    email,
    status: 'active',
    credits: 0,
    webhook_secret: newWebhookSecret(),
    webhook_secret_previous: null,
    webhook_secret_rotated_at: null,
    created_at: now,
    origin: input.origin ?? 'operator',
    pending_sender_id_limit: null,
    document_quota_bytes: null,
    daily_message_limit: input.dailyMessageLimit ?? null,
    daily_count: 0,
    daily_day: 0,
    events_url: null,
    help_text: null,
    allowed_countries: null,
  };
  await ctx.store.db.transaction().execute(async (trx) => {
    await accounts.insertAccount(trx, account);
    if (credits > 0) await creditCredits(trx, account.id, credits, 'topup', null, 'initial credits', now);
    // A sign-up is recorded as the person's own (member.signed_up, src/services/auth/owners.ts).
    if (account.origin !== 'signup') {
      await recordAudit(ctx, { action: 'account.created', accountId: account.id, target: { type: 'account', id: account.id }, changes: { name: [null, name], email: [null, email], credits: [null, credits] } }, trx);
    }
  });
  return { ...account, credits };
}

export async function getAccount(ctx: Context, id: string): Promise<AccountsTable> {
  const account = await accounts.findAccount(ctx.store.db, id);
  if (!account) throw new AppError('not_found', `No account ${id}.`);
  return account;
}

export async function listAccounts(ctx: Context, filter: { email?: string; search?: string } = {}): Promise<AccountsTable[]> {
  return accounts.listAccounts(ctx.store.db, filter);
}

export async function setAccountStatus(ctx: Context, id: string, status: AccountStatus): Promise<AccountsTable> {
  await ctx.store.db.transaction().execute(async (trx) => {
    const before = await accounts.findAccount(trx, id);
    if (!before || !(await accounts.setAccountStatus(trx, id, status))) throw new AppError('not_found', `No account ${id}.`);
    if (before.status !== status) {
      const action = status === 'suspended' ? 'account.suspended' : 'account.resumed';
      await recordAudit(ctx, { action, accountId: id, target: { type: 'account', id }, changes: { status: [before.status, status] } }, trx);
    }
  });
  return getAccount(ctx, id);
}

/** Tops up an account; returns the new balance. */
export async function addCredits(ctx: Context, accountId: string, amount: number, note: string | null = null): Promise<number> {
  if (!Number.isSafeInteger(amount) || amount <= 0) throw new AppError('invalid_request', 'The amount must be a whole number above 0.');
  const now = ctx.clock();
  const balance = await ctx.store.db.transaction().execute(async (trx) => {
    const after = await creditCredits(trx, accountId, amount, 'topup', null, note, now);
    if (after !== null) {
      await recordAudit(ctx, { action: 'credits.added', accountId, target: { type: 'account', id: accountId }, changes: { credits: [after - amount, after], amount: [null, amount], note: [null, note] } }, trx);
    }
    return after;
  });
  if (balance === null) throw new AppError('not_found', `No account ${accountId}.`);
  return balance;
}

/** Whether the cached balance equals the ledger's sum (an invariant the tests and operators check). */
export async function ledgerMatchesBalance(ctx: Context, accountId: string): Promise<{ balance: number; ledger: number }> {
  const account = await getAccount(ctx, accountId);
  return { balance: Number(account.credits), ledger: await ledgerSum(ctx.store.db, accountId) };
}

/**
 * Replaces the webhook signing secret. The previous one keeps signing beside the new one for
 * 24 hours, so receivers can switch without dropping events.
 */
export async function rotateWebhookSecret(ctx: Context, accountId: string): Promise<AccountsTable> {
  const account = await getAccount(ctx, accountId);
  await ctx.store.db.transaction().execute(async (trx) => {
    await accounts.replaceWebhookSecret(trx, accountId, newWebhookSecret(), account.webhook_secret, ctx.clock());
    // The secrets themselves never reach the log: only that it changed.
    await recordAudit(ctx, { action: 'account.webhook_secret_rotated', accountId, target: { type: 'account', id: accountId }, changes: { webhook_secret: [account.webhook_secret, 'rotated'] } }, trx);
  });
  return getAccount(ctx, accountId);
}

/** The secrets that sign an event now: the current one, and the previous one during the overlap. */
export function signingSecrets(account: AccountsTable, now: number): string[] {
  const secrets = [account.webhook_secret];
  if (
    account.webhook_secret_previous &&
    account.webhook_secret_rotated_at !== null &&
    now - Number(account.webhook_secret_rotated_at) < WEBHOOK_SECRET_OVERLAP_MS
  ) {
    secrets.push(account.webhook_secret_previous);
  }
  return secrets;
}

/** The account's messages still waiting for dispatch, for its view of the backlog. */
export async function pendingMessages(ctx: Context, accountId: string): Promise<number> {
  return accounts.countPendingMessages(ctx.store.read, accountId);
}
