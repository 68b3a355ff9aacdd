/** `GET /v1/sms/links`: the tracked links of a message or a batch and their clicks (DECISIONS.md §16). */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Context } from '../../services/context.ts';
import { listLinks } from '../../services/links/links.ts';
import { principalOf } from '../auth.ts';
import { NullableString, Pagination } from '../schemas.ts';

export const LinksQuery = Type.Object({
  message_id: Type.Optional(Type.String({ maxLength: 100, description: 'The links of this message; give this or `batch_id`.' })),
  batch_id: Type.Optional(Type.String({ maxLength: 100, description: 'The links of every message of this batch; give this or `message_id`.' })),
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
});

export const Link = Type.Object({
  message_id: Type.String(),
  url: Type.String({ description: 'The original URL the short link redirects to.' }),
  short_url: Type.String({ description: 'LINK_BASE_URL/<code>, as the message carried it.' }),
  clicks: Type.Integer({ description: 'Counted clicks: HEAD requests and preview, crawler and scanner user agents are not counted.' }),
  first_clicked_at: NullableString({ format: 'date-time', description: 'The first counted click; null before it.' }),
});

export const LinksList = Type.Object({ status: Type.Literal('success'), data: Type.Array(Link), pagination: Pagination });

export function smsLinkRoutes(ctx: Context): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/sms/links',
      {
        config: { scope: 'reports:read' },
        schema: {
          summary: 'List the tracked links of a message or a batch, with their clicks',
          description: 'The links of messages sent with `track_links`, grouped by message. Exactly one of `message_id` and `batch_id`; an id of another account, or without links, gives an empty list.',
          tags: ['SMS'],
          querystring: LinksQuery,
          response: { 200: LinksList },
        },
      },
      async (request) => listLinks(ctx, principalOf(request).accountId, request.query),
    );
  };
}
