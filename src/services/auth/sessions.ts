/**
 * Dashboard sessions for owners and operators. The cookie carries a random token; the database
 * keeps only its SHA-256 digest, so a leaked database cannot be replayed as cookies. Each session
 * has its own CSRF token, which every form posted in it must carry.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { SessionKind, SessionsTable } from '../../store/database.ts';
import { deleteExpiredSessions, deleteSession, deleteSessionsOf, findSessionByDigest, insertSession, setSessionExpiry } from '../../store/repositories/sessions.repository.ts';
import { newId } from '../../util/ids.ts';
import type { Context } from '../context.ts';

/** A signed-in person's dashboard session, as pages see it. */
export type Session = SessionsTable;
export type { SessionKind };

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
  session: Session;
}

/** How long a session opened by the password alone waits for the two-factor code. */
export const CODE_STEP_MS = 10 * 60 * 1000;

/**
 * Opens a session; `pending: 'code'` opens one that only reaches the two-factor code form, for
 * `CODE_STEP_MS`, never extended.
 */
export async function createSession(ctx: Context, kind: SessionKind, subjectId: string, opts: { pending?: 'code' } = {}): Promise<NewSession> {
  const now = ctx.clock();
  const token = randomToken();
  const session: SessionsTable = {
    id: newId('ses', now),
    token_digest: digest(token),
    kind,
    subject_id: subjectId,
    csrf_token: randomToken(),
    created_at: now,
    expires_at: now + (opts.pending ? CODE_STEP_MS : SESSION_IDLE_MS),
    pending: opts.pending ?? null,
  };
  await insertSession(ctx.store.db, session);
  // Expired sessions are swept here rather than by a worker: logins are rare and cheap to piggyback on.
  await deleteExpiredSessions(ctx.store.db, now);
  return { token, session };
}

/** The live session of a cookie token, or null; extends its expiry when in use. */
export async function resolveSession(ctx: Context, kind: SessionKind, token: string | undefined): Promise<SessionsTable | null> {
  if (!token || token.length > 200) return null;
  const now = ctx.clock();
  const session = await findSessionByDigest(ctx.store.db, kind, digest(token));
  if (!session || Number(session.expires_at) <= now) return null;
  if (!session.pending && Number(session.expires_at) - now < SESSION_IDLE_MS - REFRESH_AFTER_MS) {
    await setSessionExpiry(ctx.store.db, session.id, now + SESSION_IDLE_MS);
  }
  return session;
}

export async function endSession(ctx: Context, sessionId: string): Promise<void> {
  await deleteSession(ctx.store.db, sessionId);
}

/** Ends every session of a person except, optionally, one (after a password change). */
export async function endOtherSessions(ctx: Context, kind: SessionKind, subjectId: string, keepId?: string): Promise<void> {
  await deleteSessionsOf(ctx.store.db, kind, subjectId, keepId);
}
