/** `GET /v1/account`: the balance and state of the caller's account. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Context } from '../../services/context.ts';
import { getAccount, pendingMessages } from '../../services/accounts/accounts.ts';
import { principalOf } from '../auth.ts';
import { AccountBody } from '../schemas.ts';

export function accountRoutes(ctx: Context): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/account',
      {
        config: { scope: 'account:read' },
        schema: { summary: 'Read the account and its credit balance', tags: ['Account'], response: { 200: AccountBody } },
      },
      async (request) => {
        // Read afresh: the principal was loaded before this request's own debits.
        const account = await getAccount(ctx, principalOf(request).accountId);
        return {
          status: 'success' as const,
          data: {
            id: account.id,
            name: account.name,
            status: account.status,
            credits_remaining: Number(account.credits),
            messages_pending: await pendingMessages(ctx, account.id),
          },
        };
      },
    );
  };
}
