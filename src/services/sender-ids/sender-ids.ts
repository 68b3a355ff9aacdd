/**
 * Sender IDs: registered by an account as `pending`, reviewed by the operator. Only an `approved`
 * name can be used as `from`.
 */
import { AppError } from '../../errors/catalogue.ts';
import { checkSenderIdName, DEFAULT_RESERVED_SENDER_NAMES, senderNameKey } from '../../domain/sender-id-name.ts';
import { newId } from '../../util/ids.ts';
import { insertSenderId, listSenderIdRows, senderIdById, setSenderIdReview, type SenderIdRow } from '../../store/repositories/sender-ids.repository.ts';
import { recordAudit } from '../audit/audit.ts';
import type { Context } from '../context.ts';
import { pendingSenderIdLimit, pendingSenderIdQuotaExceeded } from '../accounts/account-limits.ts';
import { checkDocument, insertDocumentsWithinQuota } from './documents.ts';
import { countPendingSenderIds, lockAccountLimits } from '../../store/repositories/account-limits.repository.ts';
import { accountNames, countAllPendingSenderIds, pendingSenderIdsPage } from '../../store/repositories/review-queue.repository.ts';
import { isUniqueViolation } from '../../store/dialect.ts';

/** A Sender ID as the API, the dashboard and the CLI show it. */
export type SenderId = SenderIdRow;
export type SenderIdStatus = SenderIdRow['status'];

/** Called after a review decision; the dashboard issue plugs e-mail in here. */
export type SenderIdReviewListener = (ctx: Context, record: SenderId, decision: 'approved' | 'rejected' | 'info_requested') => Promise<void>;
const reviewListeners: SenderIdReviewListener[] = [];
export function onSenderIdReview(listener: SenderIdReviewListener): void {
  reviewListeners.push(listener);
}

function reservedNames(ctx: Context): readonly string[] {
  return ctx.config.reservedSenderNames.length === 0
    ? DEFAULT_RESERVED_SENDER_NAMES
    : [...DEFAULT_RESERVED_SENDER_NAMES, ...ctx.config.reservedSenderNames];
}

/** Whether a name may be registered on this installation: the naming rules and its reserved names. */
export function checkNewSenderIdName(ctx: Context, name: string): ReturnType<typeof checkSenderIdName> {
  return checkSenderIdName(name, reservedNames(ctx));
}

/**
 * Registers a Sender ID as `pending`, with its verification documents if any, all or nothing.
 * Refused with `quota_exceeded` when the account already has as many pending Sender IDs as its
 * quota allows, or when the documents would take it over its storage quota. The account's row is
 * locked first (lockAccountLimits), then the row inserted and the quota counted in the same
 * transaction: parallel registrations count each other and cannot pass the quota together.
 */
export async function registerSenderId(
  ctx: Context,
  accountId: string,
  name: string,
  documents: { filename: string; bytes: Buffer }[] = [],
): Promise<SenderId> {
  const check = checkNewSenderIdName(ctx, name);
  if (!check.ok) throw new AppError(check.code, check.reason);
  for (const d of documents) checkDocument(d);
  const now = ctx.clock();
  const record: SenderId = {
    id: newId('sid', now),
    account_id: accountId,
    name,
    name_key: senderNameKey(name),
    status: 'pending',
    review_note: null,
    created_at: now,
    updated_at: now,
  };
  try {
    await ctx.store.db.transaction().execute(async (trx) => {
      const limits = await lockAccountLimits(trx, accountId);
      if (!limits) throw new AppError('not_found', `No account ${accountId}.`);
      await insertSenderId(trx, record);
      const limit = pendingSenderIdLimit(ctx.config, limits);
      const pending = await countPendingSenderIds(trx, accountId);
      if (pending > limit) throw pendingSenderIdQuotaExceeded(pending - 1, limit);
      if (documents.length > 0) await insertDocumentsWithinQuota(ctx, trx, accountId, record.id, limits, documents);
      await recordAudit(
        ctx,
        { action: 'sender_id.registered', accountId, target: { type: 'sender_id', id: record.id }, changes: { name: [null, name], status: [null, 'pending'], documents: [null, documents.map((d) => d.filename)] } },
        trx,
      );
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw new AppError('sender_id_exists', `The account already has the Sender ID ${name} (names are compared case-insensitively).`);
    throw err;
  }
  return record;
}

export async function listSenderIds(
  ctx: Context,
  filter: { accountId?: string; status?: SenderIdStatus } = {},
): Promise<SenderId[]> {
  return listSenderIdRows(ctx.store.db, filter);
}

/** One page of the operator's review queue (oldest first), with the accounts it names and the total. */
export async function reviewQueuePage(
  ctx: Context,
  page: number,
  pageSize: number,
): Promise<{ items: SenderId[]; total: number; accounts: Map<string, { name: string; email: string }> }> {
  const items = await pendingSenderIdsPage(ctx.store.db, pageSize, (page - 1) * pageSize);
  const total = await countAllPendingSenderIds(ctx.store.db);
  const accounts = new Map((await accountNames(ctx.store.db, [...new Set(items.map((s) => s.account_id))])).map((a) => [a.id, a]));
  return { items, total, accounts };
}

async function review(
  ctx: Context,
  id: string,
  status: SenderIdStatus,
  note: string | null,
  decision: 'approved' | 'rejected' | 'info_requested',
  unlessStatus?: SenderIdStatus,
): Promise<SenderId & { alreadyApproved?: boolean }> {
  const now = ctx.clock();
  // Two approvals at once: only the one that changes the row mails the owner.
  const { changed, record } = await ctx.store.db.transaction().execute(async (trx) => {
    const before = await senderIdById(trx, id);
    const changed = await setSenderIdReview(trx, id, status, note, now, unlessStatus);
    const record = await senderIdById(trx, id);
    if (changed && before && record) {
      const action = decision === 'info_requested' ? 'sender_id.info_requested' : decision === 'approved' ? 'sender_id.approved' : 'sender_id.rejected';
      await recordAudit(
        ctx,
        { action, accountId: record.account_id, target: { type: 'sender_id', id }, changes: { status: [before.status, record.status], review_note: [before.review_note, record.review_note] } },
        trx,
      );
    }
    return { changed, record };
  });
  if (!record) throw new AppError('not_found', `No Sender ID ${id}.`);
  if (!changed) return { ...record, alreadyApproved: true };
  for (const listener of reviewListeners) {
    // A notification problem must never undo or block the decision itself.
    await listener(ctx, record, decision).catch((err: unknown) => ctx.log.error({ err, senderId: id }, 'review listener failed'));
  }
  return record;
}

/**
 * Approves a Sender ID. Approving one that is already approved changes nothing and mails no one
 * (`alreadyApproved`): the owner was told the first time.
 */
export function approveSenderId(ctx: Context, id: string): Promise<SenderId & { alreadyApproved?: boolean }> {
  return review(ctx, id, 'approved', null, 'approved', 'approved');
}

export function rejectSenderId(ctx: Context, id: string, reason: string): Promise<SenderId> {
  if (!reason.trim()) throw new AppError('invalid_request', 'A rejection needs a reason.');
  return review(ctx, id, 'rejected', reason.trim(), 'rejected');
}

/** Asks the owner for more information; the record stays `pending` with the note attached. */
export function requestSenderIdInfo(ctx: Context, id: string, note: string): Promise<SenderId> {
  if (!note.trim()) throw new AppError('invalid_request', 'A request for information needs a note.');
  return review(ctx, id, 'pending', note.trim(), 'info_requested');
}
