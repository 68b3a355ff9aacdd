/**
 * `GET|HEAD /l/<code>`, the public redirect of tracked links (DECISIONS.md §16): no
 * authentication, rate-limited per client address, one row read. `GET /v1/sms/links` lives with
 * the other `/v1/sms` routes (sms-links.ts).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Context } from '../../services/context.ts';
import { followLink } from '../../services/links/links.ts';
import { checkRateLimit, type RateLimitStore } from '../../services/rate-limit/rate-limit.ts';
import { addressBlock } from '../../webhooks/address-guard.ts';
import { html } from '../html.ts';

const NOT_FOUND_PAGE = html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Link not found</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 32rem; margin: 4rem auto; padding: 0 1rem">
<h1>This link has expired or does not exist</h1>
<p>Links in text messages work for a limited time. If you expected it to work, ask the sender for a new one.</p>
</body></html>
`.toString();

export function linkRoutes(ctx: Context, rateLimits: RateLimitStore): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.route({
      method: ['GET', 'HEAD'],
      url: '/l/:code',
      schema: {
        // A page for people, not part of the API's document.
        hide: true,
        summary: 'Follow a tracked link',
        description:
          'Public: 302 to the original URL; an unknown code, or a link older than LINK_TTL_DAYS, is a 404 page, or a 302 to LINK_FALLBACK_URL when set. HEAD requests and known preview, crawler and scanner user agents are redirected but not counted as clicks.',
        params: Type.Object({ code: Type.String({ maxLength: 64 }) }),
      },
      handler: async (request, reply) => {
        const verdict = await checkRateLimit(rateLimits, `link:${addressBlock(request.ip)}`, ctx.config.links.rateLimit, ctx.clock());
        const outcome = await followLink(ctx, request.params.code, request.method, request.headers['user-agent']);
        reply.headers(verdict.headers);
        // A link may be followed again to a changed LINK_FALLBACK_URL; no cache keeps an answer.
        reply.header('cache-control', 'no-store');
        reply.header('referrer-policy', 'no-referrer');
        if (outcome.location !== null) return reply.code(302).header('location', outcome.location).send();
        return reply.code(404).type('text/html; charset=utf-8').send(NOT_FOUND_PAGE);
      },
    });
  };
}
