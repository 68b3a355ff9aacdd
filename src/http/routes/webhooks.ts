/**
 * `GET /v1/webhooks/events` (scope `reports:read`) and `POST /v1/webhooks/events/{id}/retry`
 * (scope `sms:send`): what happened to each webhook event, and a manual re-send of an undelivered one.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { acting } from '../acting.ts';
import { Type } from 'typebox';
import type { Context } from '../../services/context.ts';
import { listWebhookEvents, retryWebhookEvent } from '../../services/webhooks/webhook-events.ts';
import { principalOf } from '../auth.ts';
import { NullableString, Pagination } from '../schemas.ts';

const WebhookAttempt = Type.Object({
  attempt: Type.Integer({ description: '1 for the first attempt.' }),
  attempted_at: Type.String({ format: 'date-time' }),
  http_status: Type.Union([Type.Integer(), Type.Null()], { description: 'The receiver\'s status, or null when no response came.' }),
  error: NullableString({ description: 'Why the attempt failed; null on success.' }),
  latency_ms: Type.Integer(),
});

const WebhookEvent = Type.Object({
  id: Type.String({ description: 'Also sent as the `X-Pigeon-Event-Id` header.' }),
  event: Type.String(),
  message_id: NullableString({ description: 'The message of a delivery event; null for an account event (`sms.received`, `recipient.opted_out`, `recipient.opted_in`).' }),
  inbound_id: NullableString({ description: 'The inbound message (`in_...`) an account event is about; null otherwise.' }),
  batch_id: NullableString(),
  url: Type.String(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('undelivered')]),
  attempt_count: Type.Integer(),
  last_error: NullableString(),
  next_attempt_at: NullableString({ format: 'date-time' }),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
  payload: Type.Record(Type.String(), Type.Unknown(), { description: 'The exact body sent (spec section 6.2).' }),
  attempts: Type.Array(WebhookAttempt),
});

const EventsQuery = Type.Object({
  message_id: Type.Optional(Type.String({ maxLength: 100 })),
  batch_id: Type.Optional(Type.String({ maxLength: 100 })),
  status: Type.Optional(Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('undelivered')])),
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
});

const EventsList = Type.Object({ status: Type.Literal('success'), data: Type.Array(WebhookEvent), pagination: Pagination });
const EventAccepted = Type.Object({ status: Type.Literal('success'), data: WebhookEvent });

export function webhookRoutes(ctx: Context): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/webhooks/events',
      {
        config: { scope: 'reports:read' },
        schema: {
          summary: 'List webhook events and their delivery attempts, newest first',
          tags: ['Webhooks'],
          querystring: EventsQuery,
          response: { 200: EventsList },
        },
      },
      async (request) => {
        const { message_id, batch_id, status } = request.query;
        const page = request.query.page ?? 1;
        const limit = request.query.limit ?? 50;
        const { rows, total } = await listWebhookEvents(
          ctx,
          { accountId: principalOf(request).accountId, messageId: message_id, batchId: batch_id, status },
          limit,
          (page - 1) * limit,
        );
        return { status: 'success' as const, data: rows, pagination: { page, limit, total } };
      },
    );

    app.post(
      '/webhooks/events/:id/retry',
      {
        config: { scope: 'sms:send', errors: ['webhook_event_not_found', 'webhook_event_not_undelivered'] },
        schema: {
          summary: 'Send an undelivered webhook event once more',
          tags: ['Webhooks'],
          params: Type.Object({ id: Type.String({ maxLength: 100 }) }),
          response: { 202: EventAccepted },
        },
      },
      async (request, reply) => {
        const view = await retryWebhookEvent(acting(ctx, request), principalOf(request).accountId, request.params.id);
        return reply.code(202).send({ status: 'success' as const, data: view });
      },
    );
  };
}
