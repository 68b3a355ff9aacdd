/**
 * Verify's tables (migration 028): services, verifications, the carrier texts, the fraud guard's
 * blocks and safe list, and the installation's secrets.
 */
import { sql } from 'kysely';
import type { Executor } from '../connect.ts';
import type { VerificationStatus, VerificationsTable, VerifyBlocksTable, VerifyServicesTable } from '../database.ts';

/** The installation's secret of that name, made from `make()` on first use (the first writer wins). */
export async function installationSecret(db: Executor, name: string, make: () => string, now: number): Promise<string> {
  await db.insertInto('installation_secrets').values({ name, value: make(), created_at: now }).onConflict((oc) => oc.column('name').doNothing()).execute();
  const row = await db.selectFrom('installation_secrets').select('value').where('name', '=', name).executeTakeFirstOrThrow();
  return row.value;
}

export async function insertService(db: Executor, row: VerifyServicesTable): Promise<void> {
  await db.insertInto('verify_services').values(row).execute();
}

export async function serviceById(db: Executor, accountId: string, id: string): Promise<VerifyServicesTable | undefined> {
  return db.selectFrom('verify_services').selectAll().where('id', '=', id).where('account_id', '=', accountId).where('deleted_at', 'is', null).executeTakeFirst();
}

export async function servicesOf(db: Executor, accountId: string): Promise<VerifyServicesTable[]> {
  return db.selectFrom('verify_services').selectAll().where('account_id', '=', accountId).where('deleted_at', 'is', null).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(1000).execute();
}

export async function updateService(db: Executor, accountId: string, id: string, changes: Partial<VerifyServicesTable>): Promise<void> {
  await db.updateTable('verify_services').set(changes).where('id', '=', id).where('account_id', '=', accountId).where('deleted_at', 'is', null).execute();
}

export async function insertVerification(db: Executor, row: VerificationsTable): Promise<void> {
  await db.insertInto('verifications').values(row).execute();
}

export async function verificationById(db: Executor, accountId: string, id: string): Promise<VerificationsTable | undefined> {
  return db.selectFrom('verifications').selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
}

/**
 * The verification to that number pending in the service (one at most: migration 032's unique
 * index); with `now`, only if not yet past its expiry.
 */
export async function pendingVerification(db: Executor, serviceId: string, recipient: string, now?: number): Promise<VerificationsTable | undefined> {
  let q = db.selectFrom('verifications').selectAll().where('service_id', '=', serviceId).where('recipient', '=', recipient).where('status', '=', 'pending');
  if (now !== undefined) q = q.where('expires_at', '>', now);
  return q.orderBy('created_at', 'desc').limit(1).executeTakeFirst();
}

/**
 * Reserves a resend: one more send and its time, if the verification is still pending, has sends
 * left and was last sent at or before `sentBefore`. Says why not otherwise.
 */
export async function reserveResend(db: Executor, id: string, maxSends: number, sentBefore: number, now: number): Promise<'ok' | 'max_sends' | 'too_soon' | 'closed'> {
  const result = await db
    .updateTable('verifications')
    .set((eb) => ({ sends: eb('sends', '+', 1), last_sent_at: now, updated_at: now }))
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where('sends', '<', maxSends)
    .where('last_sent_at', '<=', sentBefore)
    .executeTakeFirst();
  if (result.numUpdatedRows > 0n) return 'ok';
  const row = await db.selectFrom('verifications').select(['status', 'sends']).where('id', '=', id).executeTakeFirst();
  if (!row || row.status !== 'pending') return 'closed';
  return Number(row.sends) >= maxSends ? 'max_sends' : 'too_soon';
}

/** Gives back a reserved resend whose message was refused. */
export async function releaseResend(db: Executor, id: string, lastSentAt: number | null): Promise<void> {
  await db.updateTable('verifications').set((eb) => ({ sends: eb('sends', '-', 1), last_sent_at: lastSentAt })).where('id', '=', id).execute();
}

/** The message of a reserved resend, and what it cost. */
export async function recordResentMessage(db: Executor, id: string, messageId: string, credits: number): Promise<void> {
  await db.updateTable('verifications').set((eb) => ({ message_id: messageId, credits_used: eb('credits_used', '+', credits) })).where('id', '=', id).execute();
}

/**
 * Takes one check from a pending, unexpired verification in one conditional UPDATE: of any number
 * of parallel checks, at most `checks_left` get a row back, so at most that many codes are
 * evaluated. Returns the row as it was before, or undefined when no check was left.
 */
export async function takeCheck(db: Executor, id: string, now: number): Promise<VerificationsTable | undefined> {
  const row = await db
    .updateTable('verifications')
    .set((eb) => ({ checks_left: eb('checks_left', '-', 1), updated_at: now }))
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where('checks_left', '>', 0)
    .where('expires_at', '>', now)
    .returningAll()
    .executeTakeFirst();
  return row ? { ...row, checks_left: Number(row.checks_left) + 1 } : undefined;
}

/** Moves a pending verification to a final status; false when it was no longer pending. */
export async function closeVerification(db: Executor, id: string, status: VerificationStatus, now: number, extra: { checksLeft?: number } = {}): Promise<boolean> {
  const result = await db
    .updateTable('verifications')
    .set({ status, updated_at: now, ...(extra.checksLeft !== undefined ? { checks_left: extra.checksLeft } : {}) })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) return false;
  await db.deleteFrom('verify_texts').where('verification_id', '=', id).execute();
  return true;
}

/** Pending verifications past their expiry, oldest first. */
export async function expiredPending(db: Executor, now: number, limit: number): Promise<VerificationsTable[]> {
  return db.selectFrom('verifications').selectAll().where('status', '=', 'pending').where('expires_at', '<=', now).orderBy('expires_at').limit(limit).execute();
}

export async function insertVerifyText(db: Executor, messageId: string, verificationId: string, body: string): Promise<void> {
  await db.insertInto('verify_texts').values({ message_id: messageId, verification_id: verificationId, body }).execute();
}

/** The carrier texts of those messages that are verification messages. */
export async function verifyTexts(db: Executor, messageIds: readonly string[]): Promise<Map<string, string>> {
  if (messageIds.length === 0) return new Map();
  const rows = await db.selectFrom('verify_texts').select(['message_id', 'body']).where('message_id', 'in', [...messageIds]).execute();
  return new Map(rows.map((r) => [r.message_id, r.body]));
}

/** Verifications created in the service since `since` to the number, or to its range: count and oldest. */
export async function createdSince(db: Executor, serviceId: string, field: 'recipient' | 'range_prefix', value: string, since: number): Promise<{ count: number; oldest: number | null }> {
  const row = await db
    .selectFrom('verifications')
    .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min('created_at').as('oldest')])
    .where('service_id', '=', serviceId)
    .where(field, '=', value)
    .where('created_at', '>', since)
    .where('status', '!=', 'blocked')
    .executeTakeFirstOrThrow();
  return { count: Number(row.n), oldest: row.oldest === null ? null : Number(row.oldest) };
}

/** Verifications sent to the account's range since `since`, and how many of them were approved. */
export async function rangeConversion(db: Executor, accountId: string, range: string, since: number): Promise<{ sent: number; approved: number }> {
  const row = await db
    .selectFrom('verifications')
    .select([sql<number>`count(*)`.as('sent'), sql<number>`sum(case when status = 'approved' then 1 else 0 end)`.as('approved')])
    .where('account_id', '=', accountId)
    .where('range_prefix', '=', range)
    .where('created_at', '>', since)
    .where('status', '!=', 'blocked')
    .executeTakeFirstOrThrow();
  return { sent: Number(row.sent), approved: Number(row.approved ?? 0) };
}

export async function blockOf(db: Executor, accountId: string, range: string): Promise<VerifyBlocksTable | undefined> {
  return db.selectFrom('verify_blocks').selectAll().where('account_id', '=', accountId).where('range_prefix', '=', range).executeTakeFirst();
}

export async function upsertBlock(db: Executor, row: VerifyBlocksTable): Promise<void> {
  await db
    .insertInto('verify_blocks')
    .values(row)
    .onConflict((oc) => oc.columns(['account_id', 'range_prefix']).doUpdateSet({ level: row.level, blocked_at: row.blocked_at, blocked_until: row.blocked_until, sent: row.sent, approved: row.approved }))
    .execute();
}

/** Blocks still in force, of one account or of all, newest first. */
export async function activeBlocks(db: Executor, now: number, accountId?: string): Promise<VerifyBlocksTable[]> {
  let q = db.selectFrom('verify_blocks').selectAll().where('blocked_until', '>', now);
  if (accountId !== undefined) q = q.where('account_id', '=', accountId);
  return q.orderBy('blocked_at', 'desc').limit(1000).execute();
}

/** Ends a block now; its level stays, so the range's next block is longer. False when none was in force. */
export async function endBlock(db: Executor, accountId: string, range: string, now: number): Promise<boolean> {
  const result = await db.updateTable('verify_blocks').set({ blocked_until: now }).where('account_id', '=', accountId).where('range_prefix', '=', range).where('blocked_until', '>', now).executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function safeList(db: Executor, accountId: string): Promise<{ entry: string; created_at: number }[]> {
  return db.selectFrom('verify_safe_list').select(['entry', 'created_at']).where('account_id', '=', accountId).orderBy('entry').limit(1000).execute();
}

export async function addSafeListEntry(db: Executor, accountId: string, entry: string, now: number): Promise<boolean> {
  const result = await db.insertInto('verify_safe_list').values({ account_id: accountId, entry, created_at: now }).onConflict((oc) => oc.columns(['account_id', 'entry']).doNothing()).executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
}

export async function deleteSafeListEntry(db: Executor, accountId: string, entry: string): Promise<boolean> {
  const result = await db.deleteFrom('verify_safe_list').where('account_id', '=', accountId).where('entry', '=', entry).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** Per service and country: verifications sent (not blocked) and approved, since `since`. */
export async function conversionStats(db: Executor, accountId: string | undefined, since: number): Promise<{ account_id: string; service_id: string; country: string | null; sent: number; approved: number }[]> {
  let q = db
    .selectFrom('verifications')
    .select(['account_id', 'service_id', 'country', sql<number>`count(*)`.as('sent'), sql<number>`sum(case when status = 'approved' then 1 else 0 end)`.as('approved')])
    .where('created_at', '>', since)
    .where('status', '!=', 'blocked');
  if (accountId !== undefined) q = q.where('account_id', '=', accountId);
  const rows = await q.groupBy(['account_id', 'service_id', 'country']).orderBy('account_id').orderBy('service_id').orderBy('country').limit(1000).execute();
  return rows.map((r) => ({ ...r, sent: Number(r.sent), approved: Number(r.approved ?? 0) }));
}

/** The newest verification to that number in the service, whatever its status. */
export async function latestVerification(db: Executor, serviceId: string, recipient: string): Promise<VerificationsTable | undefined> {
  return db.selectFrom('verifications').selectAll().where('service_id', '=', serviceId).where('recipient', '=', recipient).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(1).executeTakeFirst();
}
