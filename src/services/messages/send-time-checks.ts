/**
 * What is checked again before an accepted message goes out (DECISIONS.md §8), since things may
 * have changed after its acceptance: the account suspended, its sender (a Sender ID withdrawn, a
 * number released) no longer the account's, its recipient opted out. The same checks run when a
 * scheduled message is released (release-scheduled.ts, in the release transaction) and when a
 * message is dispatched (dispatch-messages.ts), so a scheduled message to a recipient who opted
 * out fails at its release instead of a moment later. A refused message fails with the code named
 * here and is refunded by the caller.
 *
 * Opt-out confirmations and HELP replies (charged 0) are exempt: they go to recipients who just
 * opted out, and even to suspended accounts' recipients.
 */
import type { Executor } from '../../store/connect.ts';
import type { MessagesTable } from '../../store/database.ts';
import { numberKeyOfSender } from '../../domain/own-number.ts';
import { senderNameKey } from '../../domain/sender-id-name.ts';
import { accountStatuses } from '../../store/repositories/accounts.repository.ts';
import { numbersHeldAmong } from '../../store/repositories/numbers.repository.ts';
import { optedOutAmong } from '../../store/repositories/opt-outs.repository.ts';
import { approvedSenderKeysAmong } from '../../store/repositories/sender-ids.repository.ts';

/** What the checks need of a message. */
export type CheckedMessage = Pick<MessagesTable, 'id' | 'account_id' | 'sender' | 'recipient'> & { charged?: number | null };

export interface SendTimeRefusal {
  /** The message's `error_code`. */
  code: 'account_suspended' | 'sender_not_allowed' | 'recipient_opted_out';
  /** Its `error_message`, shown in delivery reports and `sms.failed` events. */
  message: string;
}

const NOT_SENT = 'the message was not sent and its credits were refunded.';

/**
 * The refusals among `messages`, by message id; those not named may go out. Read through `db`
 * (the release's transaction, or the database at dispatch): one query for the accounts, then
 * three per account (its senders, its numbers, its opt-outs), whatever the batch's size.
 */
export async function sendTimeRefusals(db: Executor, messages: readonly CheckedMessage[]): Promise<Map<string, SendTimeRefusal>> {
  const refusals = new Map<string, SendTimeRefusal>();
  const checked = messages.filter((m) => Number(m.charged ?? 1) !== 0);
  if (checked.length === 0) return refusals;
  const byAccount = new Map<string, CheckedMessage[]>();
  for (const m of checked) {
    const list = byAccount.get(m.account_id);
    if (list) list.push(m);
    else byAccount.set(m.account_id, [m]);
  }
  const statuses = await accountStatuses(db, [...byAccount.keys()]);
  for (const [accountId, list] of byAccount) {
    if (statuses.get(accountId) !== 'active') {
      for (const m of list) refusals.set(m.id, { code: 'account_suspended', message: `The account was suspended before the message went out; ${NOT_SENT}` });
      continue;
    }
    const senders = [...new Set(list.map((m) => m.sender))];
    const approved = await approvedSenderKeysAmong(db, accountId, senders.map(senderNameKey));
    const numbers = senders.map(numberKeyOfSender).filter((n): n is string => n !== null);
    const held = numbers.length > 0 ? await numbersHeldAmong(db, accountId, numbers) : new Set<string>();
    const senderOk = new Map(
      senders.map((s) => {
        const number = numberKeyOfSender(s);
        return [s, approved.has(senderNameKey(s)) || (number !== null && held.has(number))];
      }),
    );
    const optedOut = await optedOutAmong(db, accountId, list.map((m) => m.recipient));
    for (const m of list) {
      if (!senderOk.get(m.sender)) {
        refusals.set(m.id, {
          code: 'sender_not_allowed',
          message: `The sender ${m.sender} stopped being the account's (Sender ID withdrawn or number released) before the message went out; ${NOT_SENT}`,
        });
      } else if (optedOut.has(m.recipient)) {
        refusals.set(m.id, { code: 'recipient_opted_out', message: `The recipient opted out before the message went out; ${NOT_SENT}` });
      }
    }
  }
  return refusals;
}
