/** `POST /v1/sms/send`, `POST /v1/sms/bulk`, the cancels of scheduled messages and the redactions. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { acting } from '../acting.ts';
import { Type } from 'typebox';
import { quoteMessage, sendBulk, sendMessage } from '../../services/messages/submit-messages.ts';
import { cancelScheduled } from '../../services/messages/cancel-messages.ts';
import { redactMessages } from '../../services/messages/redact-messages.ts';
import type { Context } from '../../services/context.ts';
import { principalOf } from '../auth.ts';
import { replyIdempotently } from '../idempotency.ts';
import { BulkBody, BulkResult, CancelResult, IdempotencyHeaders, QuoteResult, RedactResult, SendBody, SendFieldErrors, SendResult } from '../schemas.ts';

export function smsRoutes(ctx: Context): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/sms/send',
      {
        config: { scope: 'sms:send', accessCheckedAtCommit: true, errors: ['invalid_recipient', 'invalid_sender_id', 'invalid_message', 'invalid_callback_url', 'invalid_send_at', 'invalid_validity_period', 'destination_not_allowed', 'destination_not_priced', 'recipient_opted_out', 'insufficient_credits', 'daily_limit_reached', 'service_unavailable'] },
        schemaErrorFormatter: SendFieldErrors,
        schema: {
          summary: 'Send one SMS',
          tags: ['SMS'],
          headers: IdempotencyHeaders,
          body: SendBody,
          response: { 200: SendResult },
        },
      },
      async (request, reply) => {
        const principal = principalOf(request);
        return replyIdempotently(
          ctx,
          reply,
          principal,
          { path: '/v1/sms/send', body: request.body, key: request.headers['idempotency-key'] },
          (finish) => sendMessage(ctx, principal, request.body, finish),
        );
      },
    );

    app.post(
      '/sms/quote',
      {
        config: { scope: 'sms:send', errors: ['invalid_recipient', 'invalid_sender_id', 'invalid_message', 'invalid_callback_url', 'invalid_send_at', 'invalid_validity_period', 'destination_not_allowed', 'destination_not_priced', 'recipient_opted_out'] },
        schemaErrorFormatter: SendFieldErrors,
        schema: {
          summary: 'Price one SMS without sending it',
          description: 'Takes the body of `POST /v1/sms/send` and answers what it would cost, refusing what the send would refuse. Nothing is stored or debited.',
          tags: ['SMS'],
          body: SendBody,
          response: { 200: QuoteResult },
        },
      },
      async (request) => ({ status: 'success' as const, data: await quoteMessage(ctx, principalOf(request), request.body) }),
    );

    app.post(
      '/sms/bulk',
      {
        config: { scope: 'sms:send', accessCheckedAtCommit: true, errors: ['invalid_sender_id', 'invalid_callback_url', 'invalid_send_at', 'invalid_validity_period', 'too_many_messages', 'insufficient_credits', 'daily_limit_reached', 'service_unavailable'] },
        schemaErrorFormatter: SendFieldErrors,
        schema: {
          summary: 'Send a campaign of individually worded messages',
          tags: ['SMS'],
          headers: IdempotencyHeaders,
          body: BulkBody,
          response: { 200: BulkResult },
        },
      },
      async (request, reply) => {
        const principal = principalOf(request);
        return replyIdempotently(
          ctx,
          reply,
          principal,
          { path: '/v1/sms/bulk', body: request.body, key: request.headers['idempotency-key'] },
          (finish) => sendBulk(ctx, principal, request.body, finish),
        );
      },
    );

    app.post(
      '/sms/:message_id/cancel',
      {
        config: { scope: 'sms:send', errors: ['not_cancelable', 'not_found'] },
        schema: {
          summary: 'Cancel a scheduled message',
          description: 'Moves the message from `scheduled` to `canceled` and refunds its credits. A message already released to dispatch, or canceled, is `not_cancelable`.',
          tags: ['SMS'],
          params: Type.Object({ message_id: Type.String() }),
          response: { 200: CancelResult },
        },
      },
      async (request) => cancelScheduled(acting(ctx, request), principalOf(request).accountId, { messageId: request.params.message_id }),
    );

    app.post(
      '/sms/batches/:batch_id/cancel',
      {
        config: { scope: 'sms:send', errors: ['not_cancelable', 'not_found'] },
        schema: {
          summary: 'Cancel what is still scheduled of a batch',
          description: 'Moves every message of the batch that is still `scheduled` to `canceled` and refunds them in one ledger row. When none is left, `not_cancelable`.',
          tags: ['SMS'],
          params: Type.Object({ batch_id: Type.String() }),
          response: { 200: CancelResult },
        },
      },
      async (request) => cancelScheduled(acting(ctx, request), principalOf(request).accountId, { batchId: request.params.batch_id }),
    );

    const redactDescription =
      'The text is removed and the recipient masked (last four digits as `XXXX`, e.g. `+44770090XXXX`) in the message, its delivery reports, the dashboard and the stored payloads of its webhook events. ' +
      'Only once final (`delivered`, `failed`, `canceled`); otherwise `not_redactable`. A repeat answers the same. Credits, statuses and times stay; backups taken before keep what they held.';

    app.post(
      '/sms/:message_id/redact',
      {
        config: { scope: 'sms:send', errors: ['not_redactable', 'not_found'] },
        schema: {
          summary: 'Redact a message: remove its text and mask its number',
          description: redactDescription,
          tags: ['SMS'],
          params: Type.Object({ message_id: Type.String() }),
          response: { 200: RedactResult },
        },
      },
      async (request) => redactMessages(acting(ctx, request), principalOf(request).accountId, { messageId: request.params.message_id }),
    );

    app.post(
      '/sms/batches/:batch_id/redact',
      {
        config: { scope: 'sms:send', errors: ['not_redactable', 'not_found'] },
        schema: {
          summary: 'Redact every message of a batch',
          description: `${redactDescription} The batch is redacted whole: while one of its messages is not final, nothing is redacted.`,
          tags: ['SMS'],
          params: Type.Object({ batch_id: Type.String() }),
          response: { 200: RedactResult },
        },
      },
      async (request) => redactMessages(acting(ctx, request), principalOf(request).accountId, { batchId: request.params.batch_id }),
    );
  };
}
