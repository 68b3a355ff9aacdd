/** Owner logins and their single-use e-mailed links (password reset, address verification). */
import type { Executor } from '../connect.ts';
import type { OwnersTable, OwnerTokenPurpose, OwnerTokensTable } from '../database.ts';

export async function findOwnerByEmail(db: Executor, email: string): Promise<OwnersTable | undefined> {
  return db.selectFrom('owners').selectAll().where('email', '=', email).executeTakeFirst();
}

export async function findOwnerById(db: Executor, id: string): Promise<OwnersTable | undefined> {
  return db.selectFrom('owners').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertOwner(db: Executor, owner: OwnersTable): Promise<void> {
  await db.insertInto('owners').values(owner).execute();
}

/** The owners' addresses of an account. */
export async function ownerEmailsOfAccount(db: Executor, accountId: string): Promise<string[]> {
  const rows = await db.selectFrom('owners').select('email').where('account_id', '=', accountId).execute();
  return rows.map((r) => r.email);
}

export async function setOwnerPasswordHash(db: Executor, ownerId: string, passwordHash: string): Promise<void> {
  await db.updateTable('owners').set({ password_hash: passwordHash }).where('id', '=', ownerId).execute();
}

export async function markOwnerVerified(db: Executor, ownerId: string, now: number): Promise<void> {
  await db.updateTable('owners').set({ email_verified_at: now }).where('id', '=', ownerId).where('email_verified_at', 'is', null).execute();
}

export async function insertOwnerToken(db: Executor, row: OwnerTokensTable): Promise<void> {
  await db.insertInto('owner_tokens').values(row).execute();
}

/**
 * Marks a live token used and returns it, or undefined when it is unknown, expired or already
 * used. The guard is in the UPDATE itself, so two parallel uses of one link cannot both pass.
 */
export async function consumeOwnerToken(db: Executor, digest: string, purpose: OwnerTokenPurpose, now: number): Promise<OwnerTokensTable | undefined> {
  return db
    .updateTable('owner_tokens')
    .set({ used_at: now })
    .where('token_digest', '=', digest)
    .where('purpose', '=', purpose)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .returningAll()
    .executeTakeFirst();
}

/** A live token of that digest, without using it (to show the form a link leads to). */
export async function findLiveOwnerToken(db: Executor, digest: string, purpose: OwnerTokenPurpose, now: number): Promise<OwnerTokensTable | undefined> {
  return db
    .selectFrom('owner_tokens')
    .selectAll()
    .where('token_digest', '=', digest)
    .where('purpose', '=', purpose)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
}

/** Voids an owner's other live links of a purpose (a new reset link replaces the old ones). */
export async function voidOwnerTokens(db: Executor, ownerId: string, purpose: OwnerTokenPurpose, now: number): Promise<void> {
  await db.updateTable('owner_tokens').set({ used_at: now }).where('owner_id', '=', ownerId).where('purpose', '=', purpose).where('used_at', 'is', null).execute();
}

/** Expired links go away; they are swept when new ones are made (both are rare). */
export async function deleteExpiredOwnerTokens(db: Executor, now: number): Promise<void> {
  await db.deleteFrom('owner_tokens').where('expires_at', '<=', now).execute();
}
