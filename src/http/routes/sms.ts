/** `POST /v1/sms/send` and `POST /v1/sms/bulk`. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requestHash, withIdempotency, type StoredResponse } from '../../services/idempotency.ts';
import { sendBulk, sendMessage } from '../../services/submit-messages.ts';
import type { Context } from '../../services/context.ts';
import { confirmAccess, principalOf } from '../auth.ts';
import { BulkBody, BulkResult, IdempotencyHeaders, SendBody, SendFieldErrors, SendResult } from '../schemas.ts';

export function smsRoutes(ctx: Context): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/sms/send',
      {
        config: { scope: 'sms:send', accessCheckedAtCommit: true, errors: ['invalid_recipient', 'invalid_sender_id', 'invalid_message', 'invalid_callback_url', 'destination_not_allowed', 'insufficient_credits', 'daily_limit_reached', 'service_unavailable'] },
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
        const result = await withIdempotency(
          ctx,
          principal.accountId,
          request.headers['idempotency-key'],
          () => requestHash('POST', '/v1/sms/send', request.body),
          async (finish): Promise<StoredResponse> => ({ status: 200, body: await sendMessage(ctx, principal, request.body, finish) }),
        );
        if (result.replayed) {
          await confirmAccess(ctx, request);
          reply.header('Idempotent-Replayed', 'true');
        }
        return reply.code(result.status as 200).send(result.body as never);
      },
    );

    app.post(
      '/sms/bulk',
      {
        config: { scope: 'sms:send', accessCheckedAtCommit: true, errors: ['invalid_sender_id', 'invalid_callback_url', 'too_many_messages', 'insufficient_credits', 'daily_limit_reached', 'service_unavailable'] },
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
        const result = await withIdempotency(
          ctx,
          principal.accountId,
          request.headers['idempotency-key'],
          () => requestHash('POST', '/v1/sms/bulk', request.body),
          async (finish): Promise<StoredResponse> => ({ status: 200, body: await sendBulk(ctx, principal, request.body, finish) }),
        );
        if (result.replayed) {
          await confirmAccess(ctx, request);
          reply.header('Idempotent-Replayed', 'true');
        }
        return reply.code(result.status as 200).send(result.body as never);
      },
    );
  };
}
