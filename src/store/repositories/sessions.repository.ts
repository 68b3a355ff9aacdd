import type { Executor } from '../connect.ts';

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
