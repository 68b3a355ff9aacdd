/**
 * Canceling scheduled messages (DECISIONS.md §8): `POST /v1/sms/{id}/cancel` and
 * `POST /v1/sms/batches/{batch_id}/cancel`. What is still `scheduled` becomes `canceled` and its
 * credits come back in one refund (one ledger row, referring to the message or the batch), in one
 * transaction; a canceled message never left, so it raises no event. A cancel and a release of the
 * same message are exclusive (both are guarded by the status): whichever commits first wins. A
 * cancel waits on the rows a release, a dispatch or a send holds, and they on its: when PostgreSQL
 * breaks such a deadlock by aborting the cancel, the cancel is run again (retry-conflicts.ts).
 */
import { AppError } from '../../errors/catalogue.ts';
import { messageTransitions } from '../../metrics.ts';
import { creditCredits } from '../../store/repositories/ledger.repository.ts';
import { accountHasBatch, accountHasMessage, cancelScheduledMessages, withdrawDispatch, type CancelTarget } from '../../store/repositories/scheduled-messages.repository.ts';
import { retryingConflicts } from '../../store/retry-conflicts.ts';
import { recordAudit } from '../audit/audit.ts';
import type { Context } from '../context.ts';
import { enqueueSmppCancelReceipts } from '../smpp-access/smpp-receipts.ts';

export type { CancelTarget };

export interface CancelResult {
  status: 'success';
  data: { canceled: string[]; credits_refunded: number };
}

/** Ids are at most this long; a longer one is unknown without a lookup. */
const MAX_ID_LENGTH = 100;

export async function cancelScheduled(ctx: Context, accountId: string, target: CancelTarget): Promise<CancelResult> {
  const id = 'messageId' in target ? target.messageId : target.batchId;
  const what = 'messageId' in target ? 'message' : 'batch';
  if (id.length > MAX_ID_LENGTH) throw new AppError('not_found', `No ${what} with this id.`);
  const now = ctx.clock();
  const result = await retryingConflicts(() =>
    ctx.store.db.transaction().execute(async (trx) => {
      const canceled = await cancelScheduledMessages(trx, accountId, target, now);
      if (canceled.length === 0) {
        const exists = 'messageId' in target ? await accountHasMessage(trx, accountId, target.messageId) : await accountHasBatch(trx, accountId, target.batchId);
        if (!exists) throw new AppError('not_found', `No ${what} with this id.`);
        throw new AppError(
          'not_cancelable',
          what === 'message'
            ? 'The message is no longer scheduled: it was already released to dispatch, or canceled.'
            : 'No message of the batch is still scheduled: they were already released to dispatch, or canceled.',
        );
      }
      // Dispatch jobs staged for them shortly before their time (release-scheduled.ts) go too.
      await withdrawDispatch(trx, canceled.map((m) => m.id));
      await enqueueSmppCancelReceipts(trx, canceled.map((m) => m.id), now);
      const credits = canceled.reduce((n, m) => n + m.credits, 0);
      // A free destination (price 0) has nothing to give back.
      if (credits > 0) await creditCredits(trx, accountId, credits, 'refund', id, 'canceled', now);
      await recordAudit(ctx, { action: 'message.canceled', accountId, target: { type: what, id }, changes: { canceled: [null, canceled.length], credits_refunded: [null, credits] } }, trx);
      return { canceled: canceled.map((m) => m.id), credits };
    }),
  );
  messageTransitions.inc({ status: 'canceled' }, result.canceled.length);
  return { status: 'success', data: { canceled: result.canceled, credits_refunded: result.credits } };
}
