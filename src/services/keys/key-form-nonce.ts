/**
 * The one-time nonce of the dashboard's "Generate New Key" form. The key is shown once and never
 * stored (not in the session either), so a reload that posts the form again must not make a
 * second key: each rendered form carries a fresh nonce, the session keeps only its digest, and a
 * post creates a key only with the nonce of the form last shown, once.
 */
import { createHash } from 'node:crypto';
import { consumeKeyFormNonce, setKeyFormNonce } from '../../store/repositories/sessions.repository.ts';
import type { Context } from '../context.ts';
import { randomToken } from '../auth/sessions.ts';

const digest = (nonce: string) => createHash('sha256').update(nonce).digest('hex');

/** A new nonce for the form about to be shown; the previous one stops working. */
export async function newKeyFormNonce(ctx: Context, sessionId: string): Promise<string> {
  const nonce = randomToken();
  await setKeyFormNonce(ctx.store.db, sessionId, digest(nonce));
  return nonce;
}

/** `fresh`: go ahead (and never again with this nonce); `used`: this form already made its key; `unknown`: an old or missing form. */
export async function useKeyFormNonce(ctx: Context, sessionId: string, nonce: string): Promise<'fresh' | 'used' | 'unknown'> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(nonce)) return 'unknown';
  return consumeKeyFormNonce(ctx.store.db, sessionId, digest(nonce));
}
