/**
 * Rows of `sessions`: dashboard sessions of owners and operators (by the digest of their cookie
 * token), with the one-time nonce of the API-key form.
 */
import type { Executor } from '../connect.ts';
import type { SessionKind, SessionsTable } from '../database.ts';

export async function insertSession(db: Executor, session: SessionsTable): Promise<void> {
  await db.insertInto('sessions').values(session).execute();
}

export async function deleteExpiredSessions(db: Executor, now: number): Promise<void> {
  await db.deleteFrom('sessions').where('expires_at', '<=', now).execute();
}

/** The session of that token digest and kind, expired or not. */
export async function findSessionByDigest(db: Executor, kind: SessionKind, tokenDigest: string): Promise<SessionsTable | undefined> {
  return db.selectFrom('sessions').selectAll().where('token_digest', '=', tokenDigest).where('kind', '=', kind).executeTakeFirst();
}

export async function setSessionExpiry(db: Executor, sessionId: string, expiresAt: number): Promise<void> {
  await db.updateTable('sessions').set({ expires_at: expiresAt }).where('id', '=', sessionId).execute();
}

export async function deleteSession(db: Executor, sessionId: string): Promise<void> {
  await db.deleteFrom('sessions').where('id', '=', sessionId).execute();
}

/** Deletes every session of a person, except `keepId` when given. */
export async function deleteSessionsOf(db: Executor, kind: SessionKind, subjectId: string, keepId?: string): Promise<void> {
  let q = db.deleteFrom('sessions').where('kind', '=', kind).where('subject_id', '=', subjectId);
  if (keepId) q = q.where('id', '!=', keepId);
  await q.execute();
}

/** Remembers the digest of the nonce the API-key form now carries, replacing any earlier one. */
export async function setKeyFormNonce(db: Executor, sessionId: string, digest: string): Promise<void> {
  await db.updateTable('sessions').set({ key_form_nonce: digest }).where('id', '=', sessionId).execute();
}

/**
 * Uses the form nonce once: `fresh` when it is the current one (and only one of two concurrent
 * posts can get that, the guard being in the UPDATE), `used` when it is the one already used,
 * else `unknown` (an older form, or none).
 */
export async function consumeKeyFormNonce(db: Executor, sessionId: string, digest: string): Promise<'fresh' | 'used' | 'unknown'> {
  const result = await db
    .updateTable('sessions')
    .set({ key_form_nonce: null, key_form_used: digest })
    .where('id', '=', sessionId)
    .where('key_form_nonce', '=', digest)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 1) return 'fresh';
  const row = await db.selectFrom('sessions').select('key_form_used').where('id', '=', sessionId).executeTakeFirst();
  return row?.key_form_used === digest ? 'used' : 'unknown';
}
