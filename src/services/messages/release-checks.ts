/**
 * What is checked again when a scheduled message is released (DECISIONS.md §8): the account may
 * have been suspended, or the Sender ID withdrawn, since the message was accepted. A refused
 * message fails with the code named here and is refunded (release-scheduled.ts). This is the one
 * place for such checks: an opt-out check joins here.
 */
import type { Executor } from '../../store/connect.ts';
import { senderNameKey } from '../../domain/sender-id-name.ts';
import { accountStatuses, approvedSenderKeys, type ReleasedMessage } from '../../store/repositories/scheduled-messages.repository.ts';

export interface ReleaseRefusal {
  /** The message's `error_code`. */
  code: 'account_suspended' | 'sender_not_allowed' | (string & {});
  message: string;
}

/** The refusals among `messages`, by message id; those not named may go to dispatch. */
export async function releaseRefusals(trx: Executor, messages: readonly ReleasedMessage[]): Promise<Map<string, ReleaseRefusal>> {
  const refusals = new Map<string, ReleaseRefusal>();
  if (messages.length === 0) return refusals;
  const accountIds = [...new Set(messages.map((m) => m.account_id))];
  const statuses = await accountStatuses(trx, accountIds);
  const senders = await approvedSenderKeys(trx, accountIds);
  for (const m of messages) {
    if (statuses.get(m.account_id) !== 'active') {
      refusals.set(m.id, { code: 'account_suspended', message: 'The account was suspended before the scheduled time; the message was not sent and its credits were refunded.' });
    } else if (!senders.has(`${m.account_id}\u0000${senderNameKey(m.sender)}`)) {
      refusals.set(m.id, {
        code: 'sender_not_allowed',
        message: `The Sender ID ${m.sender} is no longer approved for the account; the message was not sent and its credits were refunded.`,
      });
    }
  }
  return refusals;
}
