/**
 * `GET /v1/sms/inbound` (scope `inbound:read`): messages sent to the account's numbers,
 * `POST /v1/sms/inbound/{id}/redact` (scope `inbound:read`): one of them redacted, and
 * `POST /v1/simulator/inbound` (scope `sms:send`): the simulator delivering one (DECISIONS.md §8).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { acting } from '../acting.ts';
import { Type } from 'typebox';
import type { Context } from '../../services/context.ts';
import { inboundFilter, listInbound, simulateInboundForAccount } from '../../services/inbound/inbound.ts';
import { redactInbound } from '../../services/inbound/redact-inbound.ts';
import { principalOf } from '../auth.ts';
import { InboundCreated, InboundList, InboundQuery, RedactResult, SimulatedInboundBody } from '../schemas.ts';

export function inboundRoutes(ctx: Context): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/sms/inbound',
      {
        config: { scope: 'inbound:read' },
        schema: {
          summary: 'List messages received on the account’s numbers, newest first',
          tags: ['Inbound'],
          querystring: InboundQuery,
          response: { 200: InboundList },
        },
      },
      async (request) => {
        const page = request.query.page ?? 1;
        const limit = request.query.limit ?? 50;
        const filter = inboundFilter(principalOf(request).accountId, request.query);
        const { rows, total } = await listInbound(ctx, filter, limit, (page - 1) * limit);
        return { status: 'success' as const, data: rows, pagination: { page, limit, total } };
      },
    );

    app.post(
      '/sms/inbound/:id/redact',
      {
        config: { scope: 'inbound:read', errors: ['not_found'] },
        schema: {
          summary: 'Redact a received message: remove its text and mask the sender’s number',
          description:
            'The text is removed and the sender masked (last four digits as `XXXX`) in the message, the inbox and the stored payloads of the events it raised (`sms.received`, and the opt-out or opt-in its keyword caused). An opt-out keeps the full number, so it still blocks sends. A repeat answers the same.',
          tags: ['Inbound'],
          params: Type.Object({ id: Type.String() }),
          response: { 200: RedactResult },
        },
      },
      async (request) => redactInbound(acting(ctx, request), principalOf(request).accountId, request.params.id),
    );

    app.post(
      '/simulator/inbound',
      {
        config: { scope: 'sms:send', errors: ['invalid_recipient', 'invalid_message', 'not_found'] },
        schema: {
          summary: 'Simulate a message sent to one of the account’s numbers (simulator carrier only)',
          description: 'Stored and raised as `sms.received` exactly as a carrier’s message; keywords (STOP, START, HELP) apply. Only when the installation runs with `CARRIER=simulator`, and only to the account’s own numbers (else 404 `not_found`).',
          tags: ['Inbound'],
          body: SimulatedInboundBody,
          response: { 201: InboundCreated },
        },
      },
      async (request, reply) => {
        const data = await simulateInboundForAccount(ctx, principalOf(request).accountId, request.body);
        return reply.code(201).send({ status: 'success' as const, data });
      },
    );
  };
}
