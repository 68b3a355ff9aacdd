/** `GET /v1/account`: the balance and state of the caller's account. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { acting } from '../acting.ts';
import { Type } from 'typebox';
import type { Context } from '../../services/context.ts';
import { getAccount, pendingMessages } from '../../services/accounts/accounts.ts';
import { principalOf } from '../auth.ts';
import { AccountBody, EventsUrlBody, EventsUrlSet, QuietHoursAnswer, QuietHoursBody } from '../schemas.ts';
import { getQuietHours, setQuietHours } from '../../services/accounts/quiet-hours.ts';
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

    const quietHoursDescription =
      'Marketing messages (`"category":"marketing"`) reach a phone only inside this window in the recipient’s local time, in every time zone the number may be in; one accepted outside it is held until the window next opens (`held_until`). Default 08:00-20:00; never wider than 08:00-21:00, at least an hour.';
    app.get(
      '/account/quiet-hours',
      {
        config: { scope: 'account:read' },
        schema: { summary: 'Read the quiet-hours sending window', description: quietHoursDescription, tags: ['Account'], response: { 200: QuietHoursAnswer } },
      },
      async (request) => ({ status: 'success' as const, data: await getQuietHours(ctx, principalOf(request).accountId) }),
    );

    app.put(
      '/account/quiet-hours',
      {
        config: { scope: 'account:write' },
        schema: { summary: 'Set the quiet-hours sending window', description: quietHoursDescription, tags: ['Account'], body: QuietHoursBody, response: { 200: QuietHoursAnswer } },
      },
      async (request) => ({ status: 'success' as const, data: await setQuietHours(acting(ctx, request), principalOf(request).accountId, request.body.start, request.body.end) }),
    );
  };
}
