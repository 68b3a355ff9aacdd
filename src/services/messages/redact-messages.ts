/**
 * Redaction of sent messages (DECISIONS.md §13): `POST /v1/sms/{id}/redact` and
 * `POST /v1/sms/batches/{batch_id}/redact`. The text is emptied and the recipient masked in the
 * message (so in its delivery reports and the dashboard) and in the stored payloads of its webhook
 * events and in the stored answers of idempotent sends, in one transaction. Only a message in a final state: one still on its way would have its
 * text sent, or its number needed for the receipt and the events to come. A batch is redacted
 * whole or not at all, so that a 200 always means every message of it is redacted.
 */
import { isFinal } from '../../domain/message-status.ts';
import { redactPayload } from '../../domain/redaction.ts';
import { AppError } from '../../errors/catalogue.ts';
import { messagesToRedact, redactMessageRows } from '../../store/repositories/messages.repository.ts';
import { eventPayloadsOfMessages, setEventPayload } from '../../store/repositories/webhook-events.repository.ts';
import { idempotentResponsesContaining, setIdempotentResponse } from '../../store/repositories/retention.repository.ts';
import { retryingConflicts } from '../../store/retry-conflicts.ts';
import { recordAudit } from '../audit/audit.ts';
import type { Context } from '../context.ts';

export interface RedactResult {
  status: 'success';
  data: { redacted: string[] };
}

/** Ids are at most this long; a longer one is unknown without a lookup. */
const MAX_ID_LENGTH = 100;

export async function redactMessages(ctx: Context, accountId: string, target: { messageId: string } | { batchId: string }): Promise<RedactResult> {
  const id = 'messageId' in target ? target.messageId : target.batchId;
  const what = 'messageId' in target ? 'message' : 'batch';
  if (id.length > MAX_ID_LENGTH) throw new AppError('not_found', `No ${what} with this id.`);
  const redacted = await retryingConflicts(() =>
    ctx.store.db.transaction().execute(async (trx) => {
      const rows = await messagesToRedact(trx, accountId, target);
      if (rows.length === 0) throw new AppError('not_found', `No ${what} with this id.`);
      const open = rows.filter((m) => !isFinal(m.status));
      if (open.length > 0) {
        const statuses = [...new Set(open.map((m) => m.status))].join(', ');
        throw new AppError(
          'not_redactable',
          what === 'message'
            ? `The message is ${statuses}: only a message in a final state (delivered, failed, canceled) can be redacted.`
            : `${open.length} of the batch's ${rows.length} messages are not in a final state yet (${statuses}); nothing was redacted. Try again once they are delivered, failed or canceled.`,
        );
      }
      const ids = rows.map((m) => m.id);
      const recipients = new Map(rows.map((m) => [m.id, m.recipient]));
      await redactMessageRows(trx, ids);
      for (const event of await eventPayloadsOfMessages(trx, ids)) {
        const payload = redactPayload(event.payload, [recipients.get(event.message_id ?? '') ?? '']);
        if (payload !== event.payload) await setEventPayload(trx, event.id, payload);
      }
      // The stored answer of an idempotent send names the message (or batch) and its number.
      for (const stored of await idempotentResponsesContaining(trx, accountId, id)) {
        const body = redactPayload(stored.response_body, [...recipients.values()]);
        if (body !== stored.response_body) await setIdempotentResponse(trx, stored.account_id, stored.key, body);
      }
      await recordAudit(ctx, { action: 'message.redacted', accountId, target: { type: what, id }, changes: { redacted: [null, ids.length] } }, trx);
      return ids;
    }),
  );
  return { status: 'success', data: { redacted } };
}
