/**
 * `GET /v1/opt-outs` (scope `opt_outs:read`), `POST /v1/opt-outs` and `DELETE /v1/opt-outs/{phone}`
 * (scope `opt_outs:write`): the account's opt-out list (DECISIONS.md §8).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { acting } from '../acting.ts';
import { Type } from 'typebox';
import type { Context } from '../../services/context.ts';
import { addOptOut, listOptOuts, removeOptOut } from '../../services/opt-outs/opt-outs.ts';
import { principalOf } from '../auth.ts';
import { OptOutAdded, OptOutBody, OptOutsList, OptOutsQuery } from '../schemas.ts';

export function optOutRoutes(ctx: Context): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/opt-outs',
      {
        config: { scope: 'opt_outs:read' },
        schema: { summary: 'List the recipients who opted out, newest first', tags: ['Opt-outs'], querystring: OptOutsQuery, response: { 200: OptOutsList } },
      },
      async (request) => {
        const page = request.query.page ?? 1;
        const limit = request.query.limit ?? 50;
        const { rows, total } = await listOptOuts(ctx, principalOf(request).accountId, request.query.phone, limit, (page - 1) * limit);
        return { status: 'success' as const, data: rows, pagination: { page, limit, total } };
      },
    );

    app.post(
      '/opt-outs',
      {
        config: { scope: 'opt_outs:write', errors: ['invalid_recipient'] },
        schema: {
          summary: 'Add a recipient to the opt-out list',
          description: '201 when added, 200 when the recipient was already on the list. Sends to them are refused with `recipient_opted_out`.',
          tags: ['Opt-outs'],
          body: OptOutBody,
          response: { 200: OptOutAdded, 201: OptOutAdded },
        },
      },
      async (request, reply) => {
        const { optOut, created } = await addOptOut(acting(ctx, request), principalOf(request).accountId, request.body.phone, 'api');
        return reply.code(created ? 201 : 200).send({ status: 'success' as const, data: optOut });
      },
    );

    app.delete(
      '/opt-outs/:phone',
      {
        config: { scope: 'opt_outs:write', errors: ['invalid_recipient', 'not_found', 'opt_out_by_recipient'] },
        schema: {
          summary: 'Remove a recipient from the opt-out list',
          description: 'The phone in E.164, with `+` or `%2B`. A recipient who opted out by keyword (STOP) can only opt back in themselves (START): 409 `opt_out_by_recipient`.',
          tags: ['Opt-outs'],
          params: Type.Object({ phone: Type.String({ maxLength: 40 }) }),
          response: { 204: Type.Null({ description: 'Removed.' }) },
        },
      },
      async (request, reply) => {
        await removeOptOut(acting(ctx, request), principalOf(request).accountId, request.params.phone.replace(/^ /, '+'), 'api');
        return reply.code(204).send(null);
      },
    );
  };
}
