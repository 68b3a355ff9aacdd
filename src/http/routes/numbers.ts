/** `GET /v1/numbers`: the phone numbers assigned to the caller's account (DECISIONS.md §8). */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Context } from '../../services/context.ts';
import { listNumbers } from '../../services/numbers/numbers.ts';
import { iso } from '../../util/ids.ts';
import { principalOf } from '../auth.ts';
import { NumberList } from '../schemas.ts';

export function numberRoutes(ctx: Context): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/numbers',
      {
        config: { scope: 'numbers:read' },
        schema: {
          summary: 'List the phone numbers assigned to the account',
          description: 'Numbers (long numbers in E.164, or short codes) the operator assigned to the account, newest first. A send may use one as `from`.',
          tags: ['Numbers'],
          response: { 200: NumberList },
        },
      },
      async (request) => {
        const rows = await listNumbers(ctx, { accountId: principalOf(request).accountId });
        return { status: 'success' as const, data: rows.map((r) => ({ number: r.number, label: r.label, created_at: iso(Number(r.created_at)) })) };
      },
    );
  };
}
