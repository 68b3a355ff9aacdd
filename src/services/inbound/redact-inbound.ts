/**
 * Redaction of a received message (DECISIONS.md §13): `POST /v1/sms/inbound/{id}/redact`. The
 * text is emptied and the sender's number masked in the message and in the stored payloads of the
 * events it raised (`sms.received`, and the opt-out or opt-in its keyword caused), in one
 * transaction. An opt-out it caused keeps the full number: it must go on blocking sends to it.
 */
import { maskNumber, redactPayload, REDACTED_TEXT } from '../../domain/redaction.ts';
import { AppError } from '../../errors/catalogue.ts';
import { inboundById, setInboundSenderAndBody } from '../../store/repositories/inbound-messages.repository.ts';
import { eventPayloadsOfInbound, setEventPayload } from '../../store/repositories/webhook-events.repository.ts';
import { retryingConflicts } from '../../store/retry-conflicts.ts';
import { recordAudit } from '../audit/audit.ts';
import type { Context } from '../context.ts';
import type { RedactResult } from '../messages/redact-messages.ts';

export async function redactInbound(ctx: Context, accountId: string, inboundId: string): Promise<RedactResult> {
  if (inboundId.length > 100) throw new AppError('not_found', 'No inbound message with this id.');
  await retryingConflicts(() =>
    ctx.store.db.transaction().execute(async (trx) => {
      const row = await inboundById(trx, inboundId);
      if (!row || row.account_id !== accountId) throw new AppError('not_found', 'No inbound message with this id.');
      await setInboundSenderAndBody(trx, row.id, maskNumber(row.sender), REDACTED_TEXT);
      for (const event of await eventPayloadsOfInbound(trx, row.id)) {
        const payload = redactPayload(event.payload, [row.sender]);
        if (payload !== event.payload) await setEventPayload(trx, event.id, payload);
      }
      await recordAudit(ctx, { action: 'inbound.redacted', accountId, target: { type: 'inbound', id: row.id }, changes: { sender: [null, maskNumber(row.sender)] } }, trx);
    }),
  );
  return { status: 'success', data: { redacted: [inboundId] } };
}
