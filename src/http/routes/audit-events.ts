/**
 * `GET /v1/audit-events` (scope `account:read`): the account's audit log, newest first
 * (DECISIONS.md §15). `action` is an action (`api_key.created`) or its resource (`api_key`);
 * `since` an ISO 8601 date or date-time. A bad filter is 400 `invalid_request`.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AUDIT_MAX_LIMIT, auditEventsPage } from '../../services/audit/audit.ts';
import type { Context } from '../../services/context.ts';
import { principalOf } from '../auth.ts';
import { NullableString, Pagination } from '../schemas.ts';

export const AuditEventRecord = Type.Object({
  id: Type.String({ description: '`aud_...`' }),
  at: Type.String({ format: 'date-time' }),
  account_id: NullableString(),
  actor: Type.Object({
    type: Type.Union([Type.Literal('member'), Type.Literal('operator'), Type.Literal('api_key'), Type.Literal('cli'), Type.Literal('system')]),
    id: NullableString(),
    email: NullableString(),
  }),
  action: Type.String({ description: 'What changed, such as `api_key.created` (docs/security.md lists every action).' }),
  target: Type.Union([Type.Object({ type: Type.String(), id: Type.String() }), Type.Null()]),
  ip: NullableString({ description: 'The client address of the request; null from the command line.' }),
  changes: Type.Record(Type.String(), Type.Array(Type.Unknown(), { minItems: 2, maxItems: 2 }), { description: '`{"field":[before, after]}`; secrets and message text are never recorded.' }),
});

export const AuditEventsQuery = Type.Object({
  action: Type.Optional(Type.String({ maxLength: 64, description: 'An action (`api_key.created`) or a resource (`api_key`).' })),
  since: Type.Optional(Type.String({ maxLength: 40, description: 'ISO 8601 date or date-time: records at or after it.' })),
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: AUDIT_MAX_LIMIT, default: 50 })),
});

const AuditEventsList = Type.Object({ status: Type.Literal('success'), data: Type.Array(AuditEventRecord), pagination: Pagination });

export function auditEventRoutes(ctx: Context): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/audit-events',
      {
        config: { scope: 'account:read' },
        schema: {
          summary: "The account's audit log, newest first",
          description: 'Every change made by a person of the account, one of its API keys or the operator: sign-ins, keys, Sender IDs, credits, settings. Sends are not recorded.',
          tags: ['Account'],
          querystring: AuditEventsQuery,
          response: { 200: AuditEventsList },
        },
      },
      async (request) => {
        const page = request.query.page ?? 1;
        const limit = request.query.limit ?? 50;
        const result = await auditEventsPage(ctx, { accountId: principalOf(request).accountId, action: request.query.action, since: request.query.since }, page, limit);
        return { status: 'success' as const, ...result };
      },
    );
  };
}
