/**
 * The owner's Verify page, /dashboard/verifications (DECISIONS.md §14): per service and country,
 * verifications sent, approved and the conversion rate; the number ranges the fraud guard blocks,
 * each with an unblock button (recorded in the audit log as the member's).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { acting } from '../../acting.ts';
import { AppError } from '../../../errors/catalogue.ts';
import { unblockRange } from '../../../services/verify/verify.ts';
import { html } from '../../html.ts';
import { alert } from '../layout.ts';
import { field } from '../session-guard.ts';
import { verifySection } from '../verify-view.ts';
import { state, type OwnerArea } from './owner-area.ts';

export function verifyPages(app: FastifyInstance, { ctx, render }: OwnerArea): void {
  const page = async (request: FastifyRequest, reply: FastifyReply, message?: { text: string; kind: 'ok' | 'error' }) => {
    const { account, session } = state(request);
    return render(
      request,
      reply,
      'Verify',
      'verify',
      html`${message ? alert(message.text, message.kind) : html``}
<p>One-time codes sent with <code>/v1/verify</code> (or Twilio's Verify v2). A number range (a number without its last 3 digits) where 10 or more codes were sent in 24 hours and fewer than 20 % approved is blocked for 12 hours, then 24, 48 … each time again; see the <a href="/docs/guides/verify">Verify guide</a>.</p>
${await verifySection(ctx, session.csrf_token, '/dashboard/verifications/unblock', account.id)}`,
    );
  };

  app.get('/verifications', async (request, reply) => page(request, reply));
  app.post('/verifications/unblock', async (request, reply) => {
    const { account } = state(request);
    const range = field(request.body, 'range');
    try {
      await unblockRange(acting(ctx, request), account.id, range);
    } catch (err) {
      if (err instanceof AppError && err.status < 500) {
        reply.code(err.status);
        return page(request, reply, { text: err.message, kind: 'error' });
      }
      throw err;
    }
    return page(request, reply, { text: `${range}xxx is no longer blocked.`, kind: 'ok' });
  });
}
