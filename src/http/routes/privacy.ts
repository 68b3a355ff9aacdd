/**
 * `POST /v1/privacy/erasures` and `GET /v1/privacy/erasures/{id}` (scope `account:write`): erasure
 * of a phone number from every stored message of the account (DECISIONS.md §13).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { acting } from '../acting.ts';
import { Type } from 'typebox';
import type { Context } from '../../services/context.ts';
import { getErasure, requestErasure, type ErasureView } from '../../services/retention/erasures.ts';
import { principalOf } from '../auth.ts';
import { ErasureAccepted, ErasureBody } from '../schemas.ts';

function shown(e: ErasureView) {
  return { id: e.id, status: e.status, phone: e.phone, counts: e.counts, created_at: e.created_at, finished_at: e.finished_at };
}

export function privacyRoutes(ctx: Context): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/privacy/erasures',
      {
        config: { scope: 'account:write', errors: ['invalid_number'] },
        schema: {
          summary: 'Erase a phone number from the account’s stored messages',
          description:
            'Within a minute every stored message to the number and every inbound message from it is redacted (text removed, number masked as `+4477009XXXX`), with the stored payloads of their webhook events and stored idempotent responses. A message still on its way is redacted once it is final; the erasure is `pending` until then. The number stays on the opt-out list if it is there, so that it still blocks sends. Backups taken before keep what they held.',
          tags: ['Privacy'],
          body: ErasureBody,
          response: { 202: ErasureAccepted },
        },
      },
      async (request, reply) => {
        const erasure = await requestErasure(acting(ctx, request), { accountId: principalOf(request).accountId, phone: request.body.phone, by: 'api' });
        return reply.code(202).send({ status: 'success' as const, data: shown(erasure) });
      },
    );

    app.get(
      '/privacy/erasures/:id',
      {
        config: { scope: 'account:write', errors: ['not_found'] },
        schema: {
          summary: 'An erasure’s status and counts',
          tags: ['Privacy'],
          params: Type.Object({ id: Type.String({ maxLength: 100 }) }),
          response: { 200: ErasureAccepted },
        },
      },
      async (request) => ({ status: 'success' as const, data: shown(await getErasure(ctx, principalOf(request).accountId, request.params.id)) }),
    );
  };
}
