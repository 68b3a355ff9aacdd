/**
 * Settings → Security, /dashboard/settings/security: the signed-in person's two-factor sign-in.
 * Set-up shows a QR code of the otpauth:// URI and the secret, and turns two-factor on only after
 * a valid code, showing the 10 recovery codes once; with it on, a valid code turns it off or
 * replaces the recovery codes. /dashboard/login/code is the sign-in's second step.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../../errors/catalogue.ts';
import type { Context } from '../../../services/context.ts';
import { endSession } from '../../../services/auth/sessions.ts';
import { confirmTwoFactor, disableTwoFactor, regenerateRecoveryCodes, startTwoFactorSetup, twoFactorStatus, type TwoFactorPerson } from '../../../services/auth/two-factor.ts';
import { acting } from '../../acting.ts';
import { html, raw } from '../../html.ts';
import { alert, csrfField, page } from '../layout.ts';
import { clearSessionCookie, field, seeOther } from '../session-guard.ts';
import { codeRefusal, completeCodeStep } from '../two-factor-step.ts';
import { settingsTabs, state, type OwnerArea } from './owner-area.ts';

function personOf(request: FastifyRequest): TwoFactorPerson & { kind: 'owner' } {
  const { owner } = state(request);
  return { kind: 'owner', id: owner.id, email: owner.email };
}

export function securityPages(app: FastifyInstance, { ctx, render }: OwnerArea): void {
  const securityPage = async (request: FastifyRequest, reply: FastifyReply, opts: { message?: { text: string; kind: 'ok' | 'error' }; recoveryCodes?: string[] } = {}) => {
    const s = state(request);
    const csrf = csrfField(s.session.csrf_token);
    const status = await twoFactorStatus(ctx, personOf(request));
    const required = Number(s.account.require_2fa ?? 0) === 1;
    const requiredNotice =
      required && !status.enabled ? html`<p class="alert error" role="alert" id="two-factor-required">This account requires two-factor sign-in: set it up to continue.</p>` : html``;
    let body;
    if (opts.recoveryCodes) {
      body = html`<section class="card" aria-labelledby="recovery-title"><h2 id="recovery-title">Recovery codes</h2>
<p><strong>Keep these codes somewhere safe now: they are shown only once.</strong> Each signs you in once in place of a code, should you lose your authenticator.</p>
<ul id="recovery-codes" class="codes">${opts.recoveryCodes.map((c) => html`<li><code>${c}</code></li>`)}</ul>
<p><a href="/dashboard">Continue to the dashboard</a></p></section>`;
    } else if (status.enabled) {
      body = html`<section><p id="two-factor-on">Two-factor sign-in is <strong>on</strong>. Recovery codes left: ${status.recoveryCodesLeft}.</p>
<form method="post" action="/dashboard/settings/security/recovery-codes">${csrf}
<label for="regenerate-code">Code from your authenticator</label><input id="regenerate-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required pattern="[0-9]{6}" maxlength="6">
<div class="actions"><button type="submit" class="secondary">Replace my recovery codes</button></div></form>
${required ? html`<p class="hint">This account requires it: it cannot be turned off.</p>` : html`<form method="post" action="/dashboard/settings/security/disable">${csrf}
<label for="disable-code">Code from your authenticator (or a recovery code)</label><input id="disable-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required maxlength="64">
<div class="actions"><button type="submit" class="danger">Turn two-factor off</button></div></form>`}</section>`;
    } else if (status.setup) {
      body = html`<section><h2>Set up two-factor sign-in</h2>
<p>Scan this QR code with an authenticator app (or type the secret), then enter the 6-digit code it shows.</p>
<div class="qr" id="totp-qr">${raw(status.setup.qrSvg)}</div>
<p>Secret: <code class="secret" id="totp-secret">${status.setup.secret}</code></p>
<form method="post" action="/dashboard/settings/security/confirm">${csrf}
<label for="code">Code</label><input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required pattern="[0-9]{6}" maxlength="6">
<div class="actions"><button type="submit">Turn two-factor on</button></div></form></section>`;
    } else {
      body = html`<section><p id="two-factor-off">Two-factor sign-in is <strong>off</strong>. With it on, signing in asks for a code from an authenticator app after the password.</p>
<form method="post" action="/dashboard/settings/security/start">${csrf}<div class="actions"><button type="submit">Set up two-factor</button></div></form></section>`;
    }
    if (status.setup || opts.recoveryCodes) reply.header('cache-control', 'no-store');
    return render(request, reply, 'Security', 'settings', html`${settingsTabs('security')}${requiredNotice}${alert(opts.message?.text, opts.message?.kind)}${body}`);
  };

  app.get('/settings/security', async (request, reply) => securityPage(request, reply));

  app.post('/settings/security/start', async (request, reply) => {
    try {
      await startTwoFactorSetup(ctx, personOf(request));
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'invalid_request') throw err;
    }
    return seeOther(reply, '/dashboard/settings/security');
  });

  /** A change that takes a code and gives recovery codes: they are shown once, or the refusal is. */
  const withNewCodes = async (request: FastifyRequest, reply: FastifyReply, issue: (c: Context, person: TwoFactorPerson, code: string) => Promise<string[]>, done: string) => {
    let codes: string[];
    try {
      codes = await issue(acting(ctx, request), personOf(request), field(request.body, 'code'));
    } catch (err) {
      return securityPage(request, reply, { message: { text: codeRefusal(err, reply), kind: 'error' } });
    }
    return securityPage(request, reply, { message: { text: done, kind: 'ok' }, recoveryCodes: codes });
  };

  app.post('/settings/security/confirm', async (request, reply) =>
    withNewCodes(
      request,
      reply,
      async (c, person, code) => {
        const codes = await confirmTwoFactor(c, person, code, request.ip);
        state(request).owner.totp_enabled_at = ctx.clock();
        return codes;
      },
      'Two-factor sign-in is on.',
    ),
  );

  app.post('/settings/security/recovery-codes', async (request, reply) =>
    withNewCodes(request, reply, (c, person, code) => regenerateRecoveryCodes(c, person, code, request.ip), 'New recovery codes: the old ones no longer work.'),
  );

  app.post('/settings/security/disable', async (request, reply) => {
    const s = state(request);
    try {
      await disableTwoFactor(acting(ctx, request), personOf(request), field(request.body, 'code'), request.ip, Number(s.account.require_2fa ?? 0) === 1);
    } catch (err) {
      return securityPage(request, reply, { message: { text: codeRefusal(err, reply), kind: 'error' } });
    }
    return securityPage(request, reply, { message: { text: 'Two-factor sign-in is off.', kind: 'ok' } });
  });

  // The sign-in's second step.

  const codePage = (csrf: string, error?: string) =>
    page({
      title: 'Two-factor code',
      area: 'owner',
      body: html`<section class="narrow">${alert(error)}
<form method="post" action="/dashboard/login/code">${csrfField(csrf)}
<label for="code">Code from your authenticator app</label><input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required maxlength="64" aria-describedby="code-hint" autofocus>
<p class="hint" id="code-hint">Lost your authenticator? Enter one of your recovery codes instead.</p>
<div class="actions"><button type="submit">Sign in</button></div></form>
<form method="post" action="/dashboard/login/code/cancel">${csrfField(csrf)}<button type="submit" class="secondary">Cancel</button></form></section>`,
    });

  app.get('/login/code', async (request, reply) => reply.type('text/html; charset=utf-8').send(codePage(state(request).session.csrf_token)));

  app.post('/login/code', async (request, reply) => {
    const s = state(request);
    return completeCodeStep(ctx, request, reply, personOf(request), s.session, (error) => codePage(s.session.csrf_token, error));
  });

  app.post('/login/code/cancel', async (request, reply) => {
    await endSession(ctx, state(request).session.id);
    clearSessionCookie(ctx, reply, 'owner');
    return seeOther(reply, '/dashboard/login');
  });
}
