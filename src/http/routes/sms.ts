/** `POST /v1/sms/send` and `POST /v1/sms/bulk`. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { sendBulk, sendMessage } from '../../services/messages/submit-messages.ts';
import type { Context } from '../../services/context.ts';
import { principalOf } from '../auth.ts';
import { replyIdempotently } from '../idempotency.ts';
import { BulkBody, BulkResult, IdempotencyHeaders, SendBody, SendFieldErrors, SendResult } from '../schemas.ts';

export function smsRoutes(ctx: Context): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/sms/send',
      {
        config: { scope: 'sms:send', accessCheckedAtCommit: true, errors: ['invalid_recipient', 'invalid_sender_id', 'invalid_message', 'invalid_callback_url', 'destination_not_allowed', 'recipient_opted_out', 'insufficient_credits', 'daily_limit_reached', 'service_unavailable'] },
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
        return replyIdempotently(
          ctx,
          reply,
          principal,
          { path: '/v1/sms/bulk', body: request.body, key: request.headers['idempotency-key'] },
          (finish) => sendBulk(ctx, principal, request.body, finish),
        );
      },
    );
  };
}
