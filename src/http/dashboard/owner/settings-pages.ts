/**
 * Settings, under /dashboard/settings: the webhook signing secret (reveal, rotate), the quiet-hours
 * window of marketing messages (DECISIONS.md §16) and the password; /dashboard/settings itself
 * leads to the API keys.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { acting } from '../../acting.ts';
import { AppError } from '../../../errors/catalogue.ts';
import { rotateWebhookSecret, WEBHOOK_SECRET_OVERLAP_MS } from '../../../services/accounts/accounts.ts';
import { changeOwnerPassword } from '../../../services/auth/owners.ts';
import { getQuietHours, setQuietHours } from '../../../services/accounts/quiet-hours.ts';
import { html } from '../../html.ts';
import { alert, csrfField, when } from '../layout.ts';
import { field, seeOther } from '../session-guard.ts';
import { settingsTabs, state, type OwnerArea } from './owner-area.ts';

export function settingsPages(app: FastifyInstance, { ctx, render }: OwnerArea): void {
  app.get('/settings', async (_request, reply) => seeOther(reply, '/dashboard/settings/api-keys'));

  const webhookPage = async (request: FastifyRequest, reply: FastifyReply, reveal: boolean, notice?: string) => {
    const { account, session } = state(request);
    const overlap =
      account.webhook_secret_rotated_at !== null && ctx.clock() - Number(account.webhook_secret_rotated_at) < WEBHOOK_SECRET_OVERLAP_MS
        ? html`<p class="hint">The previous secret keeps signing beside this one until ${when(Number(account.webhook_secret_rotated_at) + WEBHOOK_SECRET_OVERLAP_MS)}.</p>`
        : html``;
    const secret = reveal
      ? html`<code class="secret" id="webhook-secret">${account.webhook_secret}</code><button type="button" class="secondary" data-copy="webhook-secret" aria-label="Copy the webhook signing secret">Copy</button>`
      : html`<code class="secret" id="webhook-secret">whsec_${'•'.repeat(16)}</code>
<form method="post" action="/dashboard/settings/webhook/reveal" class="inline">${csrfField(session.csrf_token)}<button type="submit" class="secondary">Reveal</button></form>`;
    if (reveal) reply.header('cache-control', 'no-store');
    return render(
      request,
      reply,
      'Webhook signing secret',
      'settings',
      html`${settingsTabs('webhook')}${alert(notice, 'ok')}<section><h2>Current secret</h2>
<p>Webhooks carry an <code>X-Pigeon-Signature</code> made with this secret; see the API documentation.</p>${secret}${overlap}</section>
<section><h2>Rotate</h2><p>A new secret signs from now on; the current one keeps signing beside it for 24 hours so that your receiver can switch without dropping events.</p>
<form method="post" action="/dashboard/settings/webhook/rotate" data-confirm="Replace the webhook signing secret?">${csrfField(session.csrf_token)}<button type="submit" class="danger">Rotate secret</button></form></section>`,
    );
  };

  app.get('/settings/webhook', async (request, reply) => webhookPage(request, reply, false));
  app.post('/settings/webhook/reveal', async (request, reply) => webhookPage(request, reply, true));
  app.post('/settings/webhook/rotate', async (request, reply) => {
    const s = state(request);
    s.account = await rotateWebhookSecret(acting(ctx, request), s.account.id);
    return webhookPage(request, reply, true, 'The secret was rotated.');
  });

  const quietHoursPage = async (request: FastifyRequest, reply: FastifyReply, message?: { text: string; kind: 'ok' | 'error' }, typed?: { start: string; end: string }) => {
    const { account, session } = state(request);
    const current = await getQuietHours(ctx, account.id);
    const shown = typed ?? current;
    return render(
      request,
      reply,
      'Quiet hours',
      'settings',
      html`${settingsTabs('quiet-hours')}${alert(message?.text, message?.kind)}<section><h2>Sending window for marketing messages</h2>
<p id="quiet-hours-current">Marketing messages reach a phone only between <strong>${current.start}</strong> and <strong>${current.end}</strong> in the recipient’s own time zone (found from the number: by area code in North America, by country elsewhere; a number that may be in several zones waits until the window is open in all of them). One sent outside it is accepted and charged at once, and held until the window opens; held messages go out over its first half hour. Transactional messages are never held.</p>
<p class="hint" id="quiet-hint">The US TCPA allows marketing texts from 08:00 to 21:00 local time; Florida, Oklahoma, Maryland, Washington and Connecticut, among others, stop at 20:00, hence the default 08:00-20:00. The window can be narrowed, never widened past 08:00-21:00.</p>
<form method="post" action="/dashboard/settings/quiet-hours">${csrfField(session.csrf_token)}
<label for="quiet-start">From</label><input id="quiet-start" name="start" type="time" required min="08:00" max="21:00" step="60" value="${shown.start}" aria-describedby="quiet-hint">
<label for="quiet-end">Until</label><input id="quiet-end" name="end" type="time" required min="08:00" max="21:00" step="60" value="${shown.end}" aria-describedby="quiet-hint">
<div class="actions"><button type="submit">Save</button></div></form></section>`,
    );
  };

  app.get('/settings/quiet-hours', async (request, reply) => quietHoursPage(request, reply));
  app.post('/settings/quiet-hours', async (request, reply) => {
    const typed = { start: field(request.body, 'start').trim().slice(0, 5), end: field(request.body, 'end').trim().slice(0, 5) };
    try {
      await setQuietHours(acting(ctx, request), state(request).account.id, typed.start, typed.end);
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'invalid_request') throw err;
      reply.code(err.status);
      return quietHoursPage(request, reply, { text: err.message, kind: 'error' }, typed);
    }
    return quietHoursPage(request, reply, { text: 'The quiet hours were saved.', kind: 'ok' });
  });

  const passwordPage = (request: FastifyRequest, reply: FastifyReply, message?: { text: string; kind: 'ok' | 'error' }) =>
    render(
      request,
      reply,
      'Password',
      'settings',
      html`${settingsTabs('password')}${alert(message?.text, message?.kind)}<section><form method="post" action="/dashboard/settings/password">${csrfField(state(request).session.csrf_token)}
<label for="current">Current password</label><input id="current" name="current" type="password" autocomplete="current-password" required>
<label for="next">New password</label><input id="next" name="next" type="password" autocomplete="new-password" required minlength="12" aria-describedby="next-hint">
<p class="hint" id="next-hint">At least 12 characters. Your other sessions are logged out.</p>
<div class="actions"><button type="submit">Change password</button></div></form></section>`,
    );

  app.get('/settings/password', async (request, reply) => passwordPage(request, reply));
  app.post('/settings/password', async (request, reply) => {
    const s = state(request);
    try {
      await changeOwnerPassword(acting(ctx, request), s.owner.id, field(request.body, 'current'), field(request.body, 'next'), request.ip, s.session.id);
    } catch (err) {
      if (!(err instanceof AppError) || !['invalid_request', 'invalid_credentials', 'login_locked', 'service_unavailable'].includes(err.code)) throw err;
      if (err.headers) reply.headers(err.headers);
      reply.code(err.status);
      return passwordPage(request, reply, { text: err.message, kind: 'error' });
    }
    return passwordPage(request, reply, { text: 'Your password was changed.', kind: 'ok' });
  });
}
