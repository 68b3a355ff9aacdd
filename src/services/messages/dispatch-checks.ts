/**
 * What is checked again when a message is dispatched, since it was accepted (queued, or held by
 * a retry): its recipient may have opted out, its account been suspended, its sender (a number
 * released, a Sender ID withdrawn) no longer be the account's (DECISIONS.md §8). Such a message
 * fails with that error_code and is refunded. Opt-out confirmations (charged 0) are exempt: they
 * go to recipients who just opted out, and even to suspended accounts' recipients.
 */
import { numberKeyOfSender } from '../../domain/own-number.ts';
import { senderNameKey } from '../../domain/sender-id-name.ts';
import type { MessagesTable } from '../../store/database.ts';
import { accountStatuses } from '../../store/repositories/accounts.repository.ts';
import { ownedNumberInTransaction } from '../../store/repositories/numbers.repository.ts';
import { optedOutAmong } from '../../store/repositories/opt-outs.repository.ts';
import { senderAccessInTransaction } from '../../store/repositories/sender-ids.repository.ts';
import type { Context } from '../context.ts';

export interface DispatchRefusal {
  errorCode: 'recipient_opted_out' | 'account_suspended' | 'sender_not_allowed';
  errorMessage: string;
}

/** The refusals among `messages`, by message id: a few queries per batch, whatever its size. */
export async function dispatchRefusals(ctx: Context, messages: readonly MessagesTable[]): Promise<Map<string, DispatchRefusal>> {
  const refusals = new Map<string, DispatchRefusal>();
  const checked = messages.filter((m) => Number(m.charged ?? 1) !== 0);
  if (checked.length === 0) return refusals;
  const db = ctx.store.db;
  const statuses = await accountStatuses(db, [...new Set(checked.map((m) => m.account_id))]);
  const byAccount = new Map<string, MessagesTable[]>();
  for (const m of checked) byAccount.set(m.account_id, [...(byAccount.get(m.account_id) ?? []), m]);
  const senderOk = new Map<string, boolean>();
  for (const [accountId, list] of byAccount) {
    if (statuses.get(accountId) === 'suspended') {
      for (const m of list) refusals.set(m.id, { errorCode: 'account_suspended', errorMessage: 'The account was suspended before the message was dispatched.' });
      continue;
    }
    const optedOut = await optedOutAmong(db, accountId, list.map((m) => m.recipient));
    for (const m of list) {
      if (optedOut.has(m.recipient)) {
        refusals.set(m.id, { errorCode: 'recipient_opted_out', errorMessage: 'The recipient opted out before the message was dispatched.' });
        continue;
      }
      const key = `${accountId}\u0000${m.sender}`;
      if (!senderOk.has(key)) {
        const number = numberKeyOfSender(m.sender);
        const owned = number !== null && (await ownedNumberInTransaction(db, accountId, number)) !== undefined;
        const approved = owned || (await senderAccessInTransaction(db, accountId, senderNameKey(m.sender)))?.status === 'approved';
        senderOk.set(key, approved);
      }
      if (!senderOk.get(key)) refusals.set(m.id, { errorCode: 'sender_not_allowed', errorMessage: `The sender ${m.sender} is no longer the account's.` });
    }
  }
  return refusals;
}
