/**
 * Single-use links mailed to owners: password reset (valid 30 minutes) and address confirmation
 * for SIGNUP=verify (valid 24 hours). The link carries a random 256-bit token; the database keeps
 * only its SHA-256 digest, so a leaked database gives no working link. Mail goes through the
 * ordinary outbox (src/services/mail/mail.ts): SMTP when SMTP_URL is set, else the operator's outbox.
 */
import { createHash } from 'node:crypto';
import { AppError } from '../../errors/catalogue.ts';
import type { OwnersTable, OwnerTokenPurpose } from '../../store/database.ts';
import {
  consumeOwnerToken,
  deleteExpiredOwnerTokens,
  findLiveOwnerToken,
  findOwnerByEmail,
  findOwnerById,
  insertOwnerToken,
  markOwnerVerified,
  setOwnerPasswordHash,
  voidOwnerTokens,
} from '../../store/repositories/owners.repository.ts';
import { countEvent, deleteStaleCounters, uncountEvent } from '../../store/repositories/rate-counters.repository.ts';
import { newId } from '../../util/ids.ts';
import { recordAudit } from '../audit/audit.ts';
import type { Context } from '../context.ts';
import { enqueueMail } from '../mail/mail.ts';
import { hashPassword } from './passwords.ts';
import { endOtherSessions, randomToken } from './sessions.ts';

export const RESET_LINK_MS = 30 * 60 * 1000;
export const VERIFY_LINK_MS = 24 * 60 * 60 * 1000;
const HOUR_MS = 60 * 60 * 1000;
/** Reset requests per client address and hour: enough for typos, too few to mail-bomb through. */
export const RESET_REQUESTS_PER_HOUR = 10;
/** Links mailed to one owner per hour, whoever asks: an owner's inbox is not a target. */
export const LINK_MAILS_PER_OWNER_PER_HOUR = 3;

function digest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** Throws `rate_limit_exceeded` (with Retry-After) when `key` counted more than `max` this hour. */
export async function countPerHour(ctx: Context, key: string, max: number, message: string): Promise<void> {
  const now = ctx.clock();
  // Swept here, where counters are made, so that the table holds only the last hour's addresses.
  await deleteStaleCounters(ctx.store, now - HOUR_MS);
  const { count, windowStartedAt } = await countEvent(ctx.store, key, HOUR_MS, now);
  if (count > max) {
    const seconds = Math.max(1, Math.ceil((windowStartedAt + HOUR_MS - now) / 1000));
    throw new AppError('rate_limit_exceeded', message, { headers: { 'retry-after': String(seconds) } });
  }
}

/** Gives back an event counted by `countPerHour` that did not happen after all. */
export async function uncountPerHour(ctx: Context, key: string): Promise<void> {
  await uncountEvent(ctx.store, key);
}

/** Whether another link may be mailed to this owner this hour (silently not, beyond the limit). */
async function mayMailOwner(ctx: Context, ownerId: string): Promise<boolean> {
  const { count } = await countEvent(ctx.store, `owner-mail|${ownerId}`, HOUR_MS, ctx.clock());
  return count <= LINK_MAILS_PER_OWNER_PER_HOUR;
}

async function issueLink(ctx: Context, owner: OwnersTable, purpose: OwnerTokenPurpose): Promise<string> {
  const now = ctx.clock();
  const token = randomToken();
  await deleteExpiredOwnerTokens(ctx.store.db, now);
  // Only the newest link works: an older one lying in a mailbox is void once a new one is sent.
  await voidOwnerTokens(ctx.store.db, owner.id, purpose, now);
  await insertOwnerToken(ctx.store.db, {
    id: newId('otk', now),
    token_digest: digest(token),
    purpose,
    owner_id: owner.id,
    created_at: now,
    expires_at: now + (purpose === 'reset' ? RESET_LINK_MS : VERIFY_LINK_MS),
    used_at: null,
  });
  const path = purpose === 'reset' ? 'reset-password' : 'verify';
  return `${ctx.config.publicUrl}/dashboard/${path}?token=${token}`;
}

/** Mails an owner the link that confirms their address (SIGNUP=verify). */
export async function sendVerificationLink(ctx: Context, owner: OwnersTable): Promise<void> {
  if (!(await mayMailOwner(ctx, owner.id))) return;
  const link = await issueLink(ctx, owner, 'verify');
  await enqueueMail(ctx, [
    {
      to: owner.email,
      subject: 'Confirm your e-mail address for Pigeon',
      text: `Follow this link to confirm your e-mail address; until then you cannot create API keys or register Sender IDs:\n\n${link}\n\nThe link works once, for 24 hours. If you did not sign up, ignore this mail.\n`,
    },
  ]);
}

/** SIGNUP=verify or closed: someone signed up with an address that already has an owner. */
export async function mailSignupAttempt(ctx: Context, owner: OwnersTable): Promise<void> {
  if (!(await mayMailOwner(ctx, owner.id))) return;
  await enqueueMail(ctx, [
    {
      to: owner.email,
      subject: 'Someone tried to sign up to Pigeon with your address',
      text: `Someone tried to create a new Pigeon account with this e-mail address, which already has one. If it was you, log in instead:\n\n${ctx.config.publicUrl}/dashboard/login\n\nForgot your password? Reset it here:\n\n${ctx.config.publicUrl}/dashboard/forgot-password\n\nIf it was not you, you need not do anything.\n`,
    },
  ]);
}

/**
 * "Forgot password?": mails a reset link when the address has an owner. The caller answers the
 * same whether it has or not, so that the form does not tell anyone which addresses have accounts.
 */
export async function requestPasswordReset(ctx: Context, email: string, ip: string): Promise<void> {
  await countPerHour(ctx, `reset|${ip}`, RESET_REQUESTS_PER_HOUR, 'Too many password-reset requests from this address; try again later.');
  const owner = await findOwnerByEmail(ctx.store.db, email.trim().toLowerCase().slice(0, 254));
  if (!owner || !(await mayMailOwner(ctx, owner.id))) return;
  const link = await issueLink(ctx, owner, 'reset');
  await enqueueMail(ctx, [
    {
      to: owner.email,
      subject: 'Reset your Pigeon password',
      text: `Follow this link to choose a new password:\n\n${link}\n\nThe link works once, for 30 minutes; choosing a new password logs out every session of yours. If you did not ask for this, ignore this mail: your password stays as it is.\n`,
    },
  ]);
}

/** Whether a reset link is still good (to show its form, or say that it has expired). */
export async function resetLinkIsLive(ctx: Context, token: string): Promise<boolean> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return false;
  return (await findLiveOwnerToken(ctx.store.db, digest(token), 'reset', ctx.clock())) !== undefined;
}

const LINK_DEAD = 'This link has expired or has already been used; ask for a new one.';

/**
 * Sets a new password through a reset link: the link is used up, every session of the owner ends
 * (whoever held one may have been the reason for the reset), and the address counts as confirmed
 * (the owner has just read mail sent to it).
 */
export async function resetPassword(ctx: Context, token: string, password: string, checkNewPassword: (p: string) => void): Promise<OwnersTable['id']> {
  checkNewPassword(password);
  if (!(await resetLinkIsLive(ctx, token))) throw new AppError('invalid_request', LINK_DEAD);
  const hash = await hashPassword(password);
  const now = ctx.clock();
  const used = await consumeOwnerToken(ctx.store.db, digest(token), 'reset', now);
  if (!used) throw new AppError('invalid_request', LINK_DEAD);
  await setOwnerPasswordHash(ctx.store.db, used.owner_id, hash);
  const owner = await findOwnerById(ctx.store.db, used.owner_id);
  if (owner) {
    await recordAudit(ctx, {
      action: 'member.password_changed',
      accountId: owner.account_id,
      target: { type: 'owner', id: owner.id },
      actor: { type: 'member', id: owner.id, email: owner.email },
      changes: { password: ['set', 'reset by link'] },
    });
  }
  await markOwnerVerified(ctx.store.db, used.owner_id, now);
  await endOtherSessions(ctx, 'owner', used.owner_id);
  return used.owner_id;
}

/** Follows a confirmation link; throws when it is unknown, used or expired. */
export async function verifyOwnerEmail(ctx: Context, token: string): Promise<void> {
  const now = ctx.clock();
  const used = /^[A-Za-z0-9_-]{43}$/.test(token) ? await consumeOwnerToken(ctx.store.db, digest(token), 'verify', now) : undefined;
  if (!used) throw new AppError('invalid_request', LINK_DEAD);
  await markOwnerVerified(ctx.store.db, used.owner_id, now);
}
