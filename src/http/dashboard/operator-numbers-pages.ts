/**
 * The operator console's Numbers page: every assigned number with its account, assigning and
 * releasing them (as `pigeon number assign|release` does), and the inbound messages that came to a
 * number nobody held (unrouted, as `pigeon inbound unrouted` lists them). Registered inside the
 * operator area's scope (operator-pages.ts), behind its session guard and CSRF check.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { acting } from '../acting.ts';
import { AppError } from '../../errors/catalogue.ts';
import type { Context } from '../../services/context.ts';
import { listUnrouted } from '../../services/inbound/inbound.ts';
import { assignNumber, listNumbers, releaseNumber } from '../../services/numbers/numbers.ts';
import { html, type Html } from '../html.ts';
import { alert, csrfField, table, when } from './layout.ts';
import { field, seeOther } from './session-guard.ts';

export interface OperatorPageKit {
  csrf(request: FastifyRequest): string;
  render(request: FastifyRequest, reply: FastifyReply, title: string, current: string, body: Html): unknown;
}

export function operatorNumbersPages(app: FastifyInstance, ctx: Context, kit: OperatorPageKit): void {
  const numbersPage = async (request: FastifyRequest, reply: FastifyReply, message?: { text: string; kind: 'ok' | 'error' }) => {
    const csrf = kit.csrf(request);
    const numbers = await listNumbers(ctx);
    const unrouted = await listUnrouted(ctx, 100);
    const rows = numbers.slice(0, 500).map((n) => [
      html`<code>${n.number}</code>`,
      html`<code>${n.account_id}</code>`,
      n.label ?? '',
      when(Number(n.created_at)),
      html`<form method="post" action="/operator/numbers/release" data-confirm="Release ${n.number}? Sends from it are refused and what comes to it is kept as unrouted, at once.">${csrfField(csrf)}<input type="hidden" name="number" value="${n.number}"><button type="submit" class="danger" aria-label="Release ${n.number}">Release</button></form>`,
    ]);
    const lost = unrouted.map((m) => [when(Date.parse(m.received_at)), m.from, html`<code>${m.to}</code>`, m.message]);
    return kit.render(
      request,
      reply,
      'Numbers',
      'numbers',
      html`${message ? alert(message.text, message.kind) : html``}
<section><h2>Assign a number</h2>
<form method="post" action="/operator/numbers">${csrfField(csrf)}
<label for="account">Account ID</label><input id="account" name="account" required maxlength="64">
<label for="number">Number (E.164 or a short code)</label><input id="number" name="number" required maxlength="32">
<label for="label">Label (optional)</label><input id="label" name="label" maxlength="100">
<div class="actions"><button type="submit">Assign</button></div></form></section>
${table('Assigned numbers, newest first', ['Number', 'Account', 'Label', 'Assigned', ''], rows, 'No numbers are assigned.')}
${table('Unrouted inbound messages (to numbers nobody held), newest first', ['Received', 'From', 'To', 'Message'], lost, 'No unrouted messages.')}`,
    );
  };

  const attempt = async (request: FastifyRequest, reply: FastifyReply, action: () => Promise<string>) => {
    try {
      const done = await action();
      return seeOther(reply, `/operator/numbers?done=${encodeURIComponent(done)}`);
    } catch (err) {
      if (err instanceof AppError && err.status < 500) {
        reply.code(err.status);
        return numbersPage(request, reply, { text: err.message, kind: 'error' });
      }
      throw err;
    }
  };

  app.get<{ Querystring: { done?: string } }>('/numbers', async (request, reply) =>
    numbersPage(request, reply, typeof request.query.done === 'string' ? { text: request.query.done.slice(0, 200), kind: 'ok' } : undefined),
  );
  app.post('/numbers', async (request, reply) =>
    attempt(request, reply, async () => {
      const n = await assignNumber(acting(ctx, request), field(request.body, 'account').trim(), field(request.body, 'number').trim(), field(request.body, 'label'));
      return `${n.number} is assigned to ${n.account_id}.`;
    }),
  );
  app.post('/numbers/release', async (request, reply) =>
    attempt(request, reply, async () => {
      const n = await releaseNumber(acting(ctx, request), field(request.body, 'number'));
      return `${n.number} is released from ${n.account_id}.`;
    }),
  );
}
