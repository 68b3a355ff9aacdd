/**
 * SMPP users: an account's credentials for binding to Pigeon as an SMSC (DECISIONS.md §10), made
 * from the CLI and the dashboard, and the decision on a bind. The password is shown once and kept
 * as a scrypt hash (the pool of src/services/auth/passwords.ts, shared with logins).
 */
import { randomInt, createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { AppError } from '../../errors/catalogue.ts';
import { isUniqueViolation } from '../../store/dialect.ts';
import { accountExists } from '../../store/repositories/api-keys.repository.ts';
import {
  deleteSmppUser as deleteUserRow,
  insertSmppUser,
  listSmppUserRows,
  liveSmppBinds,
  smppUserForBind,
  smppUserRow,
  updateSmppUserPassword,
  type SmppBindRow,
  type SmppUserRow,
} from '../../store/repositories/smpp-users.repository.ts';
import { waitingSmppDeliveries } from '../../store/repositories/smpp-outbox.repository.ts';
import { addressBlock, inRanges } from '../../webhooks/address-guard.ts';
import { hashPassword, verifyPassword } from '../auth/passwords.ts';
import { recordAudit } from '../audit/audit.ts';
import type { Context } from '../context.ts';

export const SYSTEM_ID_PATTERN = /^[A-Za-z0-9_-]{1,15}$/;
/** SMPP 3.4's password field holds 8 characters and its terminator. */
export const PASSWORD_LENGTH = 8;
export const DEFAULT_TPS = 100;
export const DEFAULT_MAX_BINDS = 4;
export const MAX_TPS = 10_000;
export const MAX_MAX_BINDS = 100;
/**
 * A bind row not refreshed for this long belongs to a process that is gone (rows are refreshed
 * every second). After a crash the dead process's binds count against max-binds this long.
 */
export const BIND_STALE_MS = 5_000;

const PASSWORD_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789';

function newPassword(): string {
  let out = '';
  for (let i = 0; i < PASSWORD_LENGTH; i++) out += PASSWORD_ALPHABET[randomInt(PASSWORD_ALPHABET.length)];
  return out;
}

export interface SmppUser {
  system_id: string;
  account_id: string;
  tps: number;
  max_binds: number;
  allow: string[];
  created_at: number;
  rotated_at: number;
}

export interface SmppUserWithPassword extends Pick<SmppUser, 'system_id' | 'account_id' | 'tps' | 'max_binds' | 'allow'> {
  password: string;
}

export interface LiveBind {
  id: string;
  type: SmppBindRow['bind_type'];
  address: string;
  since: number;
  submits: number;
}

export interface SmppUserListing extends SmppUser {
  binds: LiveBind[];
  /** Receipts and inbound messages waiting for a receiver bind. */
  waiting: number;
}

function allowList(row: Pick<SmppUserRow, 'allow'>): string[] {
  return row.allow === '' ? [] : row.allow.split(',');
}

function publicUser(row: SmppUserRow): SmppUser {
  return { system_id: row.system_id, account_id: row.account_id, tps: row.tps, max_binds: row.max_binds, allow: allowList(row), created_at: row.created_at, rotated_at: row.rotated_at };
}

function checkSystemId(systemId: string): string {
  if (!SYSTEM_ID_PATTERN.test(systemId)) {
    throw new AppError('invalid_request', `A system_id is 1 to 15 of A-Z, a-z, 0-9, _ and -; ${JSON.stringify(systemId.slice(0, 40))} is not.`);
  }
  return systemId;
}

function wholeNumber(value: number | undefined, fallback: number, max: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1 || value > max) throw new AppError('invalid_request', `${name} is a whole number from 1 to ${max}.`);
  return value;
}

/** CIDR ranges (or single addresses) in their written form; `invalid_request` for anything else. */
export function parseAllowList(items: readonly string[]): string[] {
  return items.map((raw) => {
    const item = raw.trim();
    const [base, bits, extra] = item.split('/');
    const family = isIP(base ?? '');
    const width = family === 4 ? 32 : 128;
    const bitsOk = bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= width);
    if (family === 0 || !bitsOk || extra !== undefined) throw new AppError('invalid_request', `${JSON.stringify(item.slice(0, 60))} is not an address or a CIDR range.`);
    return item;
  });
}

/** SMPP users per account, at most: each may hold binds and a queue of its own. */
export const MAX_USERS_PER_ACCOUNT = 20;

export async function createSmppUser(
  ctx: Context,
  accountId: string,
  input: { systemId: string; tps?: number; maxBinds?: number; allow?: readonly string[] },
): Promise<SmppUserWithPassword> {
  const systemId = checkSystemId(input.systemId);
  const tps = wholeNumber(input.tps, DEFAULT_TPS, MAX_TPS, '--tps');
  const maxBinds = wholeNumber(input.maxBinds, DEFAULT_MAX_BINDS, MAX_MAX_BINDS, '--max-binds');
  const allow = parseAllowList(input.allow ?? []);
  if (!(await accountExists(ctx.store.db, accountId))) throw new AppError('not_found', `No account ${accountId}.`);
  if ((await listSmppUserRows(ctx.store.db, { accountId })).length >= MAX_USERS_PER_ACCOUNT) {
    throw new AppError('invalid_request', `An account has at most ${MAX_USERS_PER_ACCOUNT} SMPP users; delete one first.`);
  }
  const password = newPassword();
  const now = ctx.clock();
  const row: SmppUserRow = { system_id: systemId, account_id: accountId, password_hash: await hashPassword(password), tps, max_binds: maxBinds, allow: allow.join(','), created_at: now, rotated_at: now };
  try {
    await ctx.store.db.transaction().execute(async (trx) => {
      await insertSmppUser(trx, row);
      await recordAudit(ctx, { action: 'smpp_user.created', accountId, target: { type: 'smpp_user', id: systemId }, changes: { system_id: [null, systemId], tps: [null, tps], max_binds: [null, maxBinds], allow: [null, allow] } }, trx);
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('system_id_taken', `The system_id ${systemId} is already in use.`);
    throw error;
  }
  return { system_id: systemId, account_id: accountId, password, tps, max_binds: maxBinds, allow };
}

/** A new password, shown once; the user's binds end (src/smpp-server/ sees the hash change). */
export async function rotateSmppUser(ctx: Context, systemId: string, owner: { accountId?: string } = {}): Promise<SmppUserWithPassword> {
  await assertOwnedBy(ctx, systemId, owner.accountId);
  const password = newPassword();
  const hash = await hashPassword(password);
  const row = await ctx.store.db.transaction().execute(async (trx) => {
    const updated = await updateSmppUserPassword(trx, systemId, hash, ctx.clock());
    if (updated) await recordAudit(ctx, { action: 'smpp_user.password_rotated', accountId: updated.account_id, target: { type: 'smpp_user', id: systemId }, changes: { password: ['set', 'rotated'] } }, trx);
    return updated;
  });
  if (!row) throw new AppError('not_found', `No SMPP user ${systemId}.`);
  return { system_id: row.system_id, account_id: row.account_id, password, tps: row.tps, max_binds: row.max_binds, allow: allowList(row) };
}

/** Removes the user and what waits for it; its binds end. */
export async function deleteSmppUser(ctx: Context, systemId: string, owner: { accountId?: string } = {}): Promise<SmppUser> {
  await assertOwnedBy(ctx, systemId, owner.accountId);
  const row = await ctx.store.db.transaction().execute(async (trx) => {
    const deleted = await deleteUserRow(trx, systemId);
    if (deleted) await recordAudit(ctx, { action: 'smpp_user.deleted', accountId: deleted.account_id, target: { type: 'smpp_user', id: systemId }, changes: { system_id: [systemId, null] } }, trx);
    return deleted;
  });
  if (!row) throw new AppError('not_found', `No SMPP user ${systemId}.`);
  return publicUser(row);
}

/** From the dashboard, an account reaches its own users only: another's is as unknown as none. */
async function assertOwnedBy(ctx: Context, systemId: string, accountId: string | undefined): Promise<void> {
  if (accountId === undefined) return;
  const row = await smppUserRow(ctx.store.db, systemId);
  if (!row || row.account_id !== accountId) throw new AppError('not_found', `No SMPP user ${systemId}.`);
}

export async function getSmppUser(ctx: Context, systemId: string): Promise<SmppUser | undefined> {
  const row = await smppUserRow(ctx.store.db, systemId);
  return row && publicUser(row);
}

/** Users oldest first, each with its live binds (of every process) and what waits for it. */
export async function listSmppUsers(ctx: Context, filter: { accountId?: string } = {}): Promise<SmppUserListing[]> {
  const users = await listSmppUserRows(ctx.store.db, filter);
  const ids = users.map((u) => u.system_id);
  const now = ctx.clock();
  const binds = await liveSmppBinds(ctx.store.db, now - BIND_STALE_MS, ids);
  const waiting = await waitingSmppDeliveries(ctx.store.db, ids, now);
  return users.map((u) => ({
    ...publicUser(u),
    binds: binds.filter((b) => b.system_id === u.system_id).map((b) => ({ id: b.id, type: b.bind_type, address: b.address, since: b.since, submits: b.submits })),
    waiting: waiting.get(u.system_id) ?? 0,
  }));
}

/** How many binds a user has in every process, from their rows. */
export async function liveBindCount(ctx: Context, systemId: string): Promise<number> {
  return (await liveSmppBinds(ctx.store.db, ctx.clock() - BIND_STALE_MS, [systemId])).length;
}

/** SMPP bind answers (DECISIONS.md §10). */
export const BIND_STATUS = { ok: 0x00, invalidPassword: 0x0e, bindFailed: 0x0d, systemError: 0x08 } as const;

export type BindDecision =
  /** `credential`: the password hash proved, which a rotation replaces. */
  | { ok: true; user: SmppUser; accountId: string; credential: string }
  | { ok: false; status: number; reason: string };

/**
 * Proved passwords, by a digest of the stored hash and the password given: a client that rebinds
 * (after every dropped link) costs no new scrypt, and a rotation changes the hash, so its old
 * entries can never match again.
 */
const proved = new Set<string>();
const MAX_PROVED = 10_000;

function provedKey(hash: string, password: string): string {
  return createHash('sha256').update(hash).update('\u0000').update(password).digest('base64');
}

/** Failed binds per address block in this process: AUTH_FAILURE_LIMIT per AUTH_FAILURE_WINDOW_MS. */
const failures = new Map<string, { count: number; resetAt: number }>();
const MAX_FAILURE_ENTRIES = 100_000;

function overFailureLimit(ctx: Context, block: string, now: number): boolean {
  const entry = failures.get(block);
  return entry !== undefined && entry.resetAt > now && entry.count >= ctx.config.authFailureLimit.max;
}

function countFailure(ctx: Context, block: string, now: number): void {
  const entry = failures.get(block);
  if (entry && entry.resetAt > now) {
    entry.count++;
    return;
  }
  if (failures.size >= MAX_FAILURE_ENTRIES) {
    for (const [k, e] of failures) if (e.resetAt <= now) failures.delete(k);
    if (failures.size >= MAX_FAILURE_ENTRIES) failures.clear();
  }
  failures.set(block, { count: 1, resetAt: now + ctx.config.authFailureLimit.windowMs });
}

/**
 * Whether `systemId` may bind with `password` from `address`, `bindsNow` being how many binds it
 * already holds. A wrong system_id or password is 0x0E; an address outside the allow-list, the
 * account suspended or too many binds, 0x0D. Past AUTH_FAILURE_LIMIT failures from the address,
 * only a password this process has already proved is checked: the others are refused with 0x0D
 * without spending a scrypt on them, so a flood of guesses costs nothing and a known client whose
 * link drops still rebinds.
 */
export async function decideBind(
  ctx: Context,
  input: { systemId: string; password: string; address: string },
  bindsNow: (systemId: string) => Promise<number>,
): Promise<BindDecision> {
  const now = ctx.clock();
  const block = addressBlock(input.address);
  const limited = overFailureLimit(ctx, block, now);
  const fail = (status: number, reason: string): BindDecision => {
    countFailure(ctx, block, now);
    return { ok: false, status, reason };
  };
  const row = SYSTEM_ID_PATTERN.test(input.systemId) ? await smppUserForBind(ctx.store.db, input.systemId) : undefined;
  if (!row) return limited ? fail(BIND_STATUS.bindFailed, 'too many failed binds from this address') : fail(BIND_STATUS.invalidPassword, 'unknown system_id');
  const key = provedKey(row.password_hash, input.password);
  if (!proved.has(key)) {
    if (limited) return fail(BIND_STATUS.bindFailed, 'too many failed binds from this address');
    let good: boolean;
    try {
      good = await verifyPassword(input.password, row.password_hash);
    } catch {
      return { ok: false, status: BIND_STATUS.bindFailed, reason: 'the server is busy checking passwords' };
    }
    if (!good) return fail(BIND_STATUS.invalidPassword, 'wrong password');
    if (proved.size >= MAX_PROVED) proved.clear();
    proved.add(key);
  }
  const allow = allowList(row);
  if (allow.length > 0 && !inRanges(input.address, allow)) return { ok: false, status: BIND_STATUS.bindFailed, reason: 'address outside the allow-list' };
  if (row.account_status === 'suspended') return { ok: false, status: BIND_STATUS.bindFailed, reason: 'account suspended' };
  if ((await bindsNow(row.system_id)) >= row.max_binds) return { ok: false, status: BIND_STATUS.bindFailed, reason: `already ${row.max_binds} binds` };
  return { ok: true, user: publicUser(row), accountId: row.account_id, credential: row.password_hash };
}
