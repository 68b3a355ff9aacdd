/**
 * The people of an account: its members, each with a role (src/domain/member-roles.ts), and the
 * invitations that bring new ones in. An invitation is an e-mailed link (valid 7 days, one use;
 * the database keeps only the SHA-256 digest of its 256-bit token) that lets the invited person
 * choose a password; it goes through the ordinary mail outbox. An account keeps at least one
 * owner, and a removed person's sessions end at once.
 *
 * Each change a person makes here is one exported function (invite, revoke, accept, change role,
 * remove), recorded in the audit log in the change's own transaction.
 */
import { createHash } from 'node:crypto';
import { isMemberRole, type MemberRole } from '../../domain/member-roles.ts';
import { AppError } from '../../errors/catalogue.ts';
import type { MemberInvitationsTable, OwnersTable } from '../../store/database.ts';
import { isUniqueViolation } from '../../store/dialect.ts';
import { findAccount } from '../../store/repositories/accounts.repository.ts';
import {
  consumeInvitation,
  countPendingInvitations,
  deleteExpiredInvitations,
  deleteMemberKeepingAnOwner,
  findLiveInvitation,
  insertInvitation,
  membersOfAccount,
  pendingInvitations,
  setMemberRoleKeepingAnOwner,
  voidInvitations,
} from '../../store/repositories/members.repository.ts';
import { findOwnerByEmail, insertOwner } from '../../store/repositories/owners.repository.ts';
import { newId } from '../../util/ids.ts';
import type { Context } from '../context.ts';
import { recordAudit } from '../audit/audit.ts';
import { enqueueMail } from '../mail/mail.ts';
import { checkNewPassword, normaliseEmail } from '../auth/owners.ts';
import { hashPassword } from '../auth/passwords.ts';
import { randomToken } from '../auth/sessions.ts';

export const INVITATION_MS = 7 * 24 * 60 * 60 * 1000;
/** Invitations waiting at once per account: a team's worth, too few to mail-bomb through. */
export const MAX_PENDING_INVITATIONS = 50;

const LINK_DEAD = 'This invitation has expired, has already been used or was withdrawn; ask the account owner for a new one.';

function digest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

function checkRole(role: unknown): MemberRole {
  if (!isMemberRole(role)) throw new AppError('invalid_request', 'Choose a role: owner, developer, billing or viewer.');
  return role;
}

export interface Member {
  id: string;
  email: string;
  role: MemberRole;
  two_factor: boolean;
  created_at: number;
}

function asMember(row: OwnersTable): Member {
  return { id: row.id, email: row.email, role: row.role ?? 'owner', two_factor: row.totp_enabled_at != null, created_at: Number(row.created_at) };
}

export async function listMembers(ctx: Context, accountId: string): Promise<Member[]> {
  return (await membersOfAccount(ctx.store.db, accountId)).map(asMember);
}

export async function listPendingInvitations(ctx: Context, accountId: string): Promise<MemberInvitationsTable[]> {
  return pendingInvitations(ctx.store.db, accountId, ctx.clock());
}

/**
 * Invites `email` to the account with `role` and mails the link. An address that already signs in
 * to Pigeon (this account or another) cannot be invited: one address, one person, one account.
 * A new invitation to the same address replaces the earlier one.
 */
export async function inviteMember(ctx: Context, accountId: string, invitedBy: string, input: { email: string; role: string }): Promise<MemberInvitationsTable> {
  const email = normaliseEmail(input.email);
  const role = checkRole(input.role);
  const account = await findAccount(ctx.store.db, accountId);
  if (!account) throw new AppError('not_found', 'No such account.');
  if (await findOwnerByEmail(ctx.store.db, email)) throw new AppError('invalid_request', `${email} already signs in to Pigeon and cannot be invited.`);
  const now = ctx.clock();
  await deleteExpiredInvitations(ctx.store.db, now);
  const token = randomToken();
  const row: MemberInvitationsTable = {
    id: newId('inv', now),
    account_id: accountId,
    email,
    role,
    token_digest: digest(token),
    invited_by: invitedBy,
    created_at: now,
    expires_at: now + INVITATION_MS,
    used_at: null,
  };
  await ctx.store.db.transaction().execute(async (trx) => {
    await voidInvitations(trx, accountId, { email }, now);
    if ((await countPendingInvitations(trx, accountId, now)) >= MAX_PENDING_INVITATIONS) {
      throw new AppError('quota_exceeded', `An account has at most ${MAX_PENDING_INVITATIONS} invitations waiting; withdraw some or wait for them to be accepted.`);
    }
    await insertInvitation(trx, row);
    await recordAudit(ctx, { action: 'invitation.sent', accountId, target: { type: 'invitation', id: row.id }, changes: { email: [null, email], role: [null, role] } }, trx);
  });
  const link = `${ctx.config.publicUrl}/dashboard/invitation?token=${token}`;
  await enqueueMail(ctx, [
    {
      to: email,
      subject: `You are invited to ${account.name} on Pigeon`,
      text: `You are invited to join ${account.name} on Pigeon as ${role}. Follow this link to choose a password and sign in:\n\n${link}\n\nThe link works once, for 7 days. If you did not expect this, ignore this mail.\n`,
    },
  ]);
  return row;
}

/** Withdraws a waiting invitation of the account; its link stops working. */
export async function revokeInvitation(ctx: Context, accountId: string, invitationId: string): Promise<void> {
  await ctx.store.db.transaction().execute(async (trx) => {
    const [voided] = await voidInvitations(trx, accountId, { id: invitationId }, ctx.clock());
    if (!voided) throw new AppError('not_found', 'No such invitation waiting.');
    await recordAudit(ctx, { action: 'invitation.revoked', accountId, target: { type: 'invitation', id: voided.id }, changes: { email: [voided.email, null], role: [voided.role, null] } }, trx);
  });
}

/** The live invitation behind a link, with its account's name (to show the form), or null. */
export async function invitationOfLink(ctx: Context, token: string): Promise<{ invitation: MemberInvitationsTable; accountName: string } | null> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return null;
  const invitation = await findLiveInvitation(ctx.store.db, digest(token), ctx.clock());
  if (!invitation) return null;
  const account = await findAccount(ctx.store.db, invitation.account_id);
  return account ? { invitation, accountName: account.name } : null;
}

/**
 * Accepts an invitation: the link is used up and the person becomes a member with the invited role
 * and the password they chose (their address counts as confirmed: they read mail sent to it).
 */
export async function acceptInvitation(ctx: Context, token: string, password: string): Promise<OwnersTable> {
  checkNewPassword(password);
  const link = await invitationOfLink(ctx, token);
  if (!link) throw new AppError('invalid_request', LINK_DEAD);
  const hash = await hashPassword(password);
  const now = ctx.clock();
  try {
    return await ctx.store.db.transaction().execute(async (trx) => {
      const used = await consumeInvitation(trx, digest(token), now);
      if (!used) throw new AppError('invalid_request', LINK_DEAD);
      const member: OwnersTable = {
        id: newId('own', now),
        account_id: used.account_id,
        email: used.email,
        password_hash: hash,
        created_at: now,
        email_verified_at: now,
        role: used.role,
      };
      await insertOwner(trx, member);
      // Nobody is signed in yet: the actor is the person joining.
      await recordAudit(
        ctx,
        { action: 'invitation.accepted', accountId: used.account_id, target: { type: 'invitation', id: used.id }, actor: { type: 'member', id: member.id, email: member.email }, changes: { member: [null, member.id], role: [null, used.role] } },
        trx,
      );
      return member;
    });
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    // The address signed up or joined elsewhere meanwhile; the invitation stays unused.
    throw new AppError('invalid_request', `${link.invitation.email} already signs in to Pigeon; log in instead.`);
  }
}

function refusal(outcome: 'last_owner' | 'not_found'): AppError {
  return outcome === 'last_owner'
    ? new AppError('invalid_request', 'An account keeps at least one owner: make someone else owner first.')
    : new AppError('not_found', 'No such member of this account.');
}

/** Changes a member's role; the account keeps at least one owner. */
export async function changeMemberRole(ctx: Context, accountId: string, memberId: string, role: string): Promise<void> {
  const chosen = checkRole(role);
  await ctx.store.db.transaction().execute(async (trx) => {
    const before = await setMemberRoleKeepingAnOwner(trx, accountId, memberId, chosen);
    if (typeof before === 'string') throw refusal(before);
    if ((before.role ?? 'owner') !== chosen) {
      await recordAudit(ctx, { action: 'member.role_changed', accountId, target: { type: 'member', id: memberId }, changes: { role: [before.role ?? 'owner', chosen] } }, trx);
    }
  });
}

/** Removes a member: their sessions end at once; the account keeps at least one owner. */
export async function removeMember(ctx: Context, accountId: string, memberId: string): Promise<void> {
  await ctx.store.db.transaction().execute(async (trx) => {
    const before = await deleteMemberKeepingAnOwner(trx, accountId, memberId);
    if (typeof before === 'string') throw refusal(before);
    await recordAudit(ctx, { action: 'member.removed', accountId, target: { type: 'member', id: memberId }, changes: { email: [before.email, null], role: [before.role ?? 'owner', null] } }, trx);
  });
}
