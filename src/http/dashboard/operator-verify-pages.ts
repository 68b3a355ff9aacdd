/**
 * The operator console's Verify page (DECISIONS.md §14): every account's verifications per service
 * and country with their conversion, and the number ranges the fraud guard blocks, each with an
 * unblock button (as `pigeon verify unblock` does, recorded in the audit log). Registered inside
 * the operator area's scope (operator-pages.ts), behind its session guard and CSRF check.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { acting } from '../acting.ts';
import { AppError } from '../../errors/catalogue.ts';
import type { Context } from '../../services/context.ts';
import { unblockRange } from '../../services/verify/verify.ts';
import { html } from '../html.ts';
import { alert } from './layout.ts';
import type { OperatorPageKit } from './operator-numbers-pages.ts';
import { field, seeOther } from './session-guard.ts';
import { verifySection } from './verify-view.ts';

export function operatorVerifyPages(app: FastifyInstance, ctx: Context, kit: OperatorPageKit): void {
  const page = async (request: FastifyRequest, reply: FastifyReply, message?: { text: string; kind: 'ok' | 'error' }) =>
    kit.render(request, reply, 'Verify', 'verify', html`${message ? alert(message.text, message.kind) : html``}${await verifySection(ctx, kit.csrf(request), '/operator/verify/unblock')}`);

  app.get<{ Querystring: { done?: string } }>('/verify', async (request, reply) =>
    page(request, reply, typeof request.query.done === 'string' ? { text: request.query.done.slice(0, 200), kind: 'ok' } : undefined),
  );
  app.post('/verify/unblock', async (request, reply) => {
    const accountId = field(request.body, 'account');
    const range = field(request.body, 'range');
    try {
      await unblockRange(acting(ctx, request), accountId, range);
    } catch (err) {
      if (err instanceof AppError && err.status < 500) {
        reply.code(err.status);
        return page(request, reply, { text: err.message, kind: 'error' });
      }
      throw err;
    }
    return seeOther(reply, `/operator/verify?done=${encodeURIComponent(`${range}xxx is no longer blocked for ${accountId}.`)}`);
  });
}
