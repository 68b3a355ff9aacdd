/**
 * What is checked again when a scheduled message is released (DECISIONS.md §8): the account may
 * have been suspended, or its sender (a Sender ID withdrawn, a number released) no longer be the
 * account's, since the message was accepted. A refused
 * message fails with the code named here and is refunded (release-scheduled.ts). This is the one
 * place for such checks: an opt-out check joins here.
 */
import type { Executor } from '../../store/connect.ts';
import { numberKeyOfSender } from '../../domain/own-number.ts';
import { senderNameKey } from '../../domain/sender-id-name.ts';
import { ownedNumberInTransaction } from '../../store/repositories/numbers.repository.ts';
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
  // A sender that is a phone number is allowed while the account holds it (one lookup per pair).
  const numbersHeld = new Map<string, boolean>();
  const holdsNumber = async (accountId: string, sender: string): Promise<boolean> => {
    const number = numberKeyOfSender(sender);
    if (number === null) return false;
    const key = `${accountId}\u0000${number}`;
    if (!numbersHeld.has(key)) numbersHeld.set(key, (await ownedNumberInTransaction(trx, accountId, number)) !== undefined);
    return numbersHeld.get(key)!;
  };
  for (const m of messages) {
    if (statuses.get(m.account_id) !== 'active') {
      refusals.set(m.id, { code: 'account_suspended', message: 'The account was suspended before the scheduled time; the message was not sent and its credits were refunded.' });
    } else if (!senders.has(`${m.account_id}\u0000${senderNameKey(m.sender)}`) && !(await holdsNumber(m.account_id, m.sender))) {
      refusals.set(m.id, {
        code: 'sender_not_allowed',
        message: `The sender ${m.sender} is no longer the account's; the message was not sent and its credits were refunded.`,
      });
    }
  }
  return refusals;
}
