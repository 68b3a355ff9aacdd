/**
 * Dashboard sessions for owners and operators. The cookie carries a random token; the database
 * keeps only its SHA-256 digest, so a leaked database cannot be replayed as cookies. Each session
 * has its own CSRF token, which every form posted in it must carry.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { SessionKind, SessionsTable } from '../store/database.ts';
import { newId } from '../util/ids.ts';
import type { Context } from './context.ts';

/** Sliding lifetime: a session unused for this long ends. */
export const SESSION_IDLE_MS = 12 * 60 * 60 * 1000;
/** The expiry is pushed forward at most this often, so that most requests only read. */
const REFRESH_AFTER_MS = 10 * 60 * 1000;

function digest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** A random token for a cookie or a form field (256 bits, base64url). */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Compares two secrets in constant time. */
export function sameSecret(a: string | undefined, b: string | undefined): boolean {
  if (typeof a !== 'string' || typeof b !== 'string' || a.length === 0) return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export interface NewSession {
  /** For the cookie; shown once, never stored. */
  token: string;
  session: SessionsTable;
}

export async function createSession(ctx: Context, kind: SessionKind, subjectId: string): Promise<NewSession> {
  const now = ctx.clock();
  const token = randomToken();
  const session: SessionsTable = {
    id: newId('ses', now),
    token_digest: digest(token),
    kind,
    subject_id: subjectId,
    csrf_token: randomToken(),
    created_at: now,
    expires_at: now + SESSION_IDLE_MS,
  };
  await ctx.store.db.insertInto('sessions').values(session).execute();
  // Expired sessions are swept here rather than by a worker: logins are rare and cheap to piggyback on.
  await ctx.store.db.deleteFrom('sessions').where('expires_at', '<=', now).execute();
  return { token, session };
}

/** The live session of a cookie token, or null; extends its expiry when in use. */
export async function resolveSession(ctx: Context, kind: SessionKind, token: string | undefined): Promise<SessionsTable | null> {
  if (!token || token.length > 200) return null;
  const now = ctx.clock();
  const session = await ctx.store.db
    .selectFrom('sessions')
    .selectAll()
    .where('token_digest', '=', digest(token))
    .where('kind', '=', kind)
    .executeTakeFirst();
  if (!session || Number(session.expires_at) <= now) return null;
  if (Number(session.expires_at) - now < SESSION_IDLE_MS - REFRESH_AFTER_MS) {
    await ctx.store.db.updateTable('sessions').set({ expires_at: now + SESSION_IDLE_MS }).where('id', '=', session.id).execute();
  }
  return session;
}

export async function endSession(ctx: Context, sessionId: string): Promise<void> {
  await ctx.store.db.deleteFrom('sessions').where('id', '=', sessionId).execute();
}

/** Ends every session of a person except, optionally, one (after a password change). */
export async function endOtherSessions(ctx: Context, kind: SessionKind, subjectId: string, keepId?: string): Promise<void> {
  let q = ctx.store.db.deleteFrom('sessions').where('kind', '=', kind).where('subject_id', '=', subjectId);
  if (keepId) q = q.where('id', '!=', keepId);
  await q.execute();
}
