/**
 * The people of an account (rows of `owners`, each with a role) and their e-mailed invitations.
 * Removing a person takes their sessions, links and recovery codes with them in one transaction.
 */
import type { Executor } from '../connect.ts';
import { dialectOf } from '../dialect.ts';
import type { MemberInvitationsTable, MemberRole, OwnersTable } from '../database.ts';

export async function membersOfAccount(db: Executor, accountId: string): Promise<OwnersTable[]> {
  return db.selectFrom('owners').selectAll().where('account_id', '=', accountId).orderBy('created_at').orderBy('id').execute();
}

export async function countOwnersOf(db: Executor, accountId: string): Promise<number> {
  const row = await db.selectFrom('owners').select((eb) => eb.fn.countAll<number | string>().as('n')).where('account_id', '=', accountId).where('role', '=', 'owner').executeTakeFirst();
  return Number(row?.n ?? 0);
}

/**
 * Sets a member's role, unless that would leave the account without an owner. Run it in a
 * transaction (`trx`): the count and the change are then one (on PostgreSQL the account's owner
 * rows are locked first), so two owners demoting each other at once cannot both succeed. Returns
 * the member as they were, or why it was refused.
 */
export async function setMemberRoleKeepingAnOwner(trx: Executor, accountId: string, memberId: string, role: MemberRole): Promise<OwnersTable | 'last_owner' | 'not_found'> {
  const owners = await lockOwners(trx, accountId);
  const member = await trx.selectFrom('owners').selectAll().where('id', '=', memberId).where('account_id', '=', accountId).executeTakeFirst();
  if (!member) return 'not_found';
  if (member.role === 'owner' && role !== 'owner' && owners <= 1) return 'last_owner';
  await trx.updateTable('owners').set({ role }).where('id', '=', memberId).execute();
  return member;
}

/**
 * Removes a member with their sessions, links and recovery codes, unless they are the last owner.
 * Run it in a transaction (`trx`). Returns the member as they were, or why it was refused.
 */
export async function deleteMemberKeepingAnOwner(trx: Executor, accountId: string, memberId: string): Promise<OwnersTable | 'last_owner' | 'not_found'> {
  const owners = await lockOwners(trx, accountId);
  const member = await trx.selectFrom('owners').selectAll().where('id', '=', memberId).where('account_id', '=', accountId).executeTakeFirst();
  if (!member) return 'not_found';
  if (member.role === 'owner' && owners <= 1) return 'last_owner';
  await trx.deleteFrom('sessions').where('kind', '=', 'owner').where('subject_id', '=', memberId).execute();
  await trx.deleteFrom('recovery_codes').where('subject_kind', '=', 'owner').where('subject_id', '=', memberId).execute();
  await trx.deleteFrom('owner_tokens').where('owner_id', '=', memberId).execute();
  await trx.deleteFrom('owners').where('id', '=', memberId).execute();
  return member;
}

/** Counts the account's owners, locking their rows on PostgreSQL (SQLite's writer lock serialises anyway). */
async function lockOwners(trx: Executor, accountId: string): Promise<number> {
  const rows = await trx
    .selectFrom('owners')
    .select('id')
    .where('account_id', '=', accountId)
    .where('role', '=', 'owner')
    .$if(dialectOf(trx) === 'postgres', (qb) => qb.forUpdate())
    .execute();
  return rows.length;
}

export async function insertInvitation(db: Executor, row: MemberInvitationsTable): Promise<void> {
  await db.insertInto('member_invitations').values(row).execute();
}

/** Invitations not used and not expired, newest first. */
export async function pendingInvitations(db: Executor, accountId: string, now: number): Promise<MemberInvitationsTable[]> {
  return db
    .selectFrom('member_invitations')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
}

export async function countPendingInvitations(db: Executor, accountId: string, now: number): Promise<number> {
  const row = await db
    .selectFrom('member_invitations')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('account_id', '=', accountId)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** Voids the account's live invitations of an address (a new one replaces them), or one by id; returns those voided. */
export async function voidInvitations(db: Executor, accountId: string, match: { email?: string; id?: string }, now: number): Promise<MemberInvitationsTable[]> {
  let q = db.updateTable('member_invitations').set({ used_at: now }).where('account_id', '=', accountId).where('used_at', 'is', null);
  if (match.email !== undefined) q = q.where('email', '=', match.email);
  if (match.id !== undefined) q = q.where('id', '=', match.id);
  return q.returningAll().execute();
}

export async function findLiveInvitation(db: Executor, digest: string, now: number): Promise<MemberInvitationsTable | undefined> {
  return db.selectFrom('member_invitations').selectAll().where('token_digest', '=', digest).where('used_at', 'is', null).where('expires_at', '>', now).executeTakeFirst();
}

/** Uses an invitation once; the guard is in the UPDATE, so two parallel uses cannot both pass. */
export async function consumeInvitation(db: Executor, digest: string, now: number): Promise<MemberInvitationsTable | undefined> {
  return db
    .updateTable('member_invitations')
    .set({ used_at: now })
    .where('token_digest', '=', digest)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .returningAll()
    .executeTakeFirst();
}

/** Expired invitations go away; swept when new ones are made. */
export async function deleteExpiredInvitations(db: Executor, now: number): Promise<void> {
  await db.deleteFrom('member_invitations').where('expires_at', '<=', now).execute();
}

export async function setOwnerRole(db: Executor, ownerId: string, role: MemberRole): Promise<void> {
  await db.updateTable('owners').set({ role }).where('id', '=', ownerId).execute();
}
