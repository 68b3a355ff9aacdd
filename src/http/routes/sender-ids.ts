/** `GET` and `POST /v1/sms/sender-ids`. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { acting } from '../acting.ts';
import { listSenderIds, registerSenderId, type SenderId } from '../../services/sender-ids/sender-ids.ts';
import type { Context } from '../../services/context.ts';
import { iso } from '../../util/ids.ts';
import { principalOf } from '../auth.ts';
import { SenderIdBody, SenderIdCreated, SenderIdFieldErrors, SenderIdList } from '../schemas.ts';

function record(row: SenderId) {
  return { id: row.id, name: row.name, status: row.status, created_at: iso(Number(row.created_at)) };
}

export function senderIdRoutes(ctx: Context): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/sms/sender-ids',
      {
        config: { scope: 'sender_ids:read' },
        schema: { summary: 'List the Sender IDs of the account', tags: ['Sender IDs'], response: { 200: SenderIdList } },
      },
      async (request) => {
        const rows = await listSenderIds(ctx, { accountId: principalOf(request).accountId });
        return { status: 'success' as const, data: rows.map(record) };
      },
    );

    app.post(
      '/sms/sender-ids',
      {
        config: { scope: 'sender_ids:write', errors: ['invalid_sender_id_name', 'sender_id_not_allowed', 'sender_id_exists', 'quota_exceeded'] },
        schemaErrorFormatter: SenderIdFieldErrors,
        schema: {
          summary: 'Register a Sender ID for review',
          tags: ['Sender IDs'],
          body: SenderIdBody,
          response: { 201: SenderIdCreated },
        },
      },
      async (request, reply) => {
        const row = await registerSenderId(acting(ctx, request), principalOf(request).accountId, request.body.name);
        return reply.code(201).send({ status: 'success' as const, data: record(row) });
      },
    );
  };
}
