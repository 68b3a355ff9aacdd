/** `GET /v1/pricing`: what a destination costs the caller's account. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Context } from '../../services/context.ts';
import { destinationPrice } from '../../services/pricing/pricing.ts';
import { principalOf } from '../auth.ts';
import { PricingBody, PricingQuery } from '../schemas.ts';

export function pricingRoutes(ctx: Context): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/pricing',
      {
        config: { scope: 'account:read', errors: ['invalid_recipient', 'destination_not_priced', 'destination_not_allowed'] },
        schema: {
          summary: 'The price of a destination',
          description: 'The price per segment of a send to `to` now, from the account\'s rate card (its longest matching prefix), and its next dated change.',
          tags: ['Account'],
          querystring: PricingQuery,
          response: { 200: PricingBody },
        },
      },
      async (request) => ({ status: 'success' as const, data: await destinationPrice(ctx, principalOf(request).accountId, request.query.to) }),
    );
  };
}
