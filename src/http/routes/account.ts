/** `GET /v1/account`: the balance and state of the caller's account. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { acting } from '../acting.ts';
import { Type } from 'typebox';
import type { Context } from '../../services/context.ts';
import { getAccount, pendingMessages } from '../../services/accounts/accounts.ts';
import { principalOf } from '../auth.ts';
import { AccountBody, EventsUrlBody, EventsUrlSet } from '../schemas.ts';
import { setEventsUrl } from '../../services/accounts/events-url.ts';

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

    app.put(
      '/account/events-url',
      {
        config: { scope: 'account:write', errors: ['invalid_events_url'] },
        schema: {
          summary: 'Set where the account’s own events go',
          description: 'The account’s own events, which belong to no send request (`sms.received`, `recipient.opted_out`, `recipient.opted_in`), are POSTed to this URL, signed and retried like delivery events.',
          tags: ['Account'],
          body: EventsUrlBody,
          response: { 200: EventsUrlSet },
        },
      },
      async (request) => {
        const url = await setEventsUrl(acting(ctx, request), principalOf(request).accountId, request.body.url);
        return { status: 'success' as const, data: { url } };
      },
    );

    app.delete(
      '/account/events-url',
      {
        config: { scope: 'account:write' },
        schema: { summary: 'Stop sending the account’s own events', tags: ['Account'], response: { 204: Type.Null({ description: 'Cleared.' }) } },
      },
      async (request, reply) => {
        await setEventsUrl(acting(ctx, request), principalOf(request).accountId, null);
        return reply.code(204).send(null);
      },
    );
  };
}
