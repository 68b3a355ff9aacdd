/**
 * The operator console's two-factor sign-in: /operator/security (set up with a QR code and the
 * secret, on after a valid code, recovery codes shown once and replaced with a valid code) and
 * /operator/login/code (the sign-in's second step). With OPERATOR_REQUIRE_2FA=true an operator without two-factor is sent to
 * /operator/security before any other page.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../errors/catalogue.ts';
import type { Context } from '../../services/context.ts';
import type { Operator } from '../../services/auth/operators.ts';
import type { Session } from '../../services/auth/sessions.ts';
import { confirmTwoFactor, regenerateRecoveryCodes, startTwoFactorSetup, twoFactorStatus, type TwoFactorPerson } from '../../services/auth/two-factor.ts';
import { acting } from '../acting.ts';
import { html, raw, type Html } from '../html.ts';
import { alert, csrfField, page } from './layout.ts';
import { field, seeOther } from './session-guard.ts';
import { codeRefusal, completeCodeStep } from './two-factor-step.ts';
const SECURITY = '/operator/security';
/** Where an operator required to use two-factor may go before setting it up. */
const BEFORE_SETUP = new Set(['/operator/security', '/operator/security/start', '/operator/security/confirm', '/operator/logout']);

type OperatorState = (request: FastifyRequest) => { session: Session; operator: Operator };
type Render = (request: FastifyRequest, reply: FastifyReply, title: string, current: string, body: Html) => FastifyReply;

export function operatorSecurityPages(app: FastifyInstance, ctx: Context, state: OperatorState, render: Render): void {
  const personOf = (request: FastifyRequest): TwoFactorPerson => {
    const { operator } = state(request);
    return { kind: 'operator', id: operator.id, email: operator.email };
  };

  if (ctx.config.operatorRequire2fa) {
    app.addHook('preHandler', async (request, reply) => {
      const config = request.routeOptions.config;
      if (config.public || config.codeStep || !request.operator) return;
      if (request.operator.operator.totp_enabled_at != null || BEFORE_SETUP.has(request.routeOptions.url ?? '')) return;
      if (request.headers['hx-request']) return reply.header('hx-redirect', SECURITY).code(401).send('');
      return seeOther(reply, SECURITY);
    });
  }

  const securityPage = async (request: FastifyRequest, reply: FastifyReply, opts: { error?: string; recoveryCodes?: string[] } = {}) => {
    const csrf = csrfField(state(request).session.csrf_token);
    const status = await twoFactorStatus(ctx, personOf(request));
    let body;
    if (opts.recoveryCodes) {
      body = html`<section><h2>Recovery codes</h2><p><strong>Keep these codes somewhere safe now: they are shown only once.</strong></p>
<ul id="recovery-codes">${opts.recoveryCodes.map((c) => html`<li><code>${c}</code></li>`)}</ul><p><a href="/operator">Continue</a></p></section>`;
    } else if (status.enabled) {
      body = html`<p id="two-factor-on">Two-factor sign-in is <strong>on</strong>. Recovery codes left: ${status.recoveryCodesLeft}. <code>pigeon operator reset-2fa EMAIL</code> resets it.</p>
<form method="post" action="/operator/security/recovery-codes">${csrf}<label for="regenerate-code">Code from your authenticator</label><input id="regenerate-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required maxlength="6">
<div class="actions"><button type="submit" class="secondary">Replace my recovery codes</button></div></form>`;
    } else if (status.setup) {
      body = html`<section><p>Scan this QR code with an authenticator app (or type the secret), then enter the 6-digit code it shows.</p>
<div class="qr" id="totp-qr">${raw(status.setup.qrSvg)}</div><p>Secret: <code class="secret" id="totp-secret">${status.setup.secret}</code></p>
<form method="post" action="/operator/security/confirm">${csrf}<label for="code">Code</label><input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required maxlength="6">
<div class="actions"><button type="submit">Turn two-factor on</button></div></form></section>`;
    } else {
      body = html`${ctx.config.operatorRequire2fa ? html`<p class="alert error" role="alert" id="two-factor-required">Two-factor sign-in is required of operators: set it up to continue.</p>` : ''}
<p id="two-factor-off">Two-factor sign-in is <strong>off</strong>.</p><form method="post" action="/operator/security/start">${csrf}<button type="submit">Set up two-factor</button></form>`;
    }
    reply.header('cache-control', 'no-store');
    return render(request, reply, 'Two-factor sign-in', 'security', html`${alert(opts.error)}${body}`);
  };

  app.get('/security', async (request, reply) => securityPage(request, reply));
  app.post('/security/start', async (request, reply) => {
    await startTwoFactorSetup(ctx, personOf(request)).catch((err: unknown) => {
      if (!(err instanceof AppError) || err.code !== 'invalid_request') throw err;
    });
    return seeOther(reply, SECURITY);
  });
  /** A change that takes a code and gives recovery codes: they are shown once, or the refusal is. */
  const withNewCodes = async (request: FastifyRequest, reply: FastifyReply, issue: typeof confirmTwoFactor) => {
    try {
      const codes = await issue(acting(ctx, request), personOf(request), field(request.body, 'code'), request.ip);
      return await securityPage(request, reply, { recoveryCodes: codes });
    } catch (err) {
      return securityPage(request, reply, { error: codeRefusal(err, reply) });
    }
  };
  app.post('/security/confirm', async (request, reply) => withNewCodes(request, reply, confirmTwoFactor));
  app.post('/security/recovery-codes', async (request, reply) => withNewCodes(request, reply, regenerateRecoveryCodes));

  const codePage = (csrf: string, error?: string) =>
    page({
      title: 'Two-factor code',
      area: 'operator',
      body: html`<section class="narrow">${alert(error)}<form method="post" action="/operator/login/code">${csrfField(csrf)}
<label for="code">Code from your authenticator app, or a recovery code</label><input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required maxlength="64" autofocus>
<div class="actions"><button type="submit">Sign in</button></div></form></section>`,
    });

  app.get('/login/code', { config: { codeStep: true } }, async (request, reply) => reply.type('text/html; charset=utf-8').send(codePage(state(request).session.csrf_token)));
  app.post('/login/code', { config: { codeStep: true } }, async (request, reply) => {
    const s = state(request);
    return completeCodeStep(ctx, request, reply, personOf(request), s.session, (error) => codePage(s.session.csrf_token, error));
  });
}
