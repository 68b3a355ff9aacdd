/**
 * A message submitted over SMPP, put back together, goes through the one acceptance of
 * `POST /sms/send` (submit-messages.ts): Sender IDs and numbers, opt-outs, limits, backlog
 * shares, credits. What its receipts need (the user, every part's id, registered_delivery, the
 * addresses) is written in the same transaction, so an answered submit is never stored without it.
 *
 * Its access (the account's status, the Sender ID, the destination and opt-out lists) is decided
 * as an API send's is: from the access cache as of the last revision seen, with no read of its own,
 * and checked again at commit if the revision moved meanwhile (access-cache.ts). Each refusal
 * decided that way is confirmed on the current revision before it is answered, as an API send's is.
 */
import { markSmppPartsDone, type SmppPartRow } from '../../store/repositories/smpp-parts.repository.ts';
import { lastAccessSnapshot } from '../auth/access-cache.ts';
import { checkAccountAccess } from '../auth/access.ts';
import { sendMessage, type SendResult } from '../messages/submit-messages.ts';
import type { Context } from '../context.ts';

export interface SmppSubmission {
  accountId: string;
  systemId: string;
  /** The first part's id: the message's id everywhere. */
  messageId: string;
  partIds: string[];
  from: string;
  to: string;
  text: string;
  sendAt: number | null;
  validitySeconds: number | null;
  registeredDelivery: number;
  sourceAddr: string;
  sourceTon: number;
  destinationAddr: string;
  /** The stored parts' group (a long message in parts): marked done in the same transaction. */
  partsGroup?: SmppPartRow;
}

export async function acceptSmppSubmission(ctx: Context, s: SmppSubmission): Promise<SendResult> {
  const access = await checkAccountAccess(ctx, s.accountId, await lastAccessSnapshot(ctx.store));
  const now = ctx.clock();
  return sendMessage(
    ctx,
    { accountId: s.accountId, access },
    {
      to: s.to,
      from: s.from,
      message: s.text,
      ...(s.sendAt !== null ? { send_at: new Date(s.sendAt).toISOString() } : {}),
      ...(s.validitySeconds !== null ? { validity_period: s.validitySeconds } : {}),
    },
    undefined,
    {
      messageId: s.messageId,
      // Inserted with the rest of its group's in one statement, as its message is.
      smppMessage: {
        message_id: s.messageId,
        system_id: s.systemId,
        part_ids: s.partIds.join(','),
        registered_delivery: s.registeredDelivery,
        source_addr: s.sourceAddr,
        source_ton: s.sourceTon,
        destination_addr: s.destinationAddr,
        created_at: now,
      },
      ...(s.partsGroup
        ? {
            // No lock here (the acceptance may be one of a group of many): the sweep leaves a group
            // whose parts are all stored alone for a while, so it cannot give this one up meanwhile.
            write: async (trx) => {
              await markSmppPartsDone(trx, s.partsGroup!, Date.now());
            },
          }
        : {}),
    },
  );
}
