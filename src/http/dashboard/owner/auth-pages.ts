/**
 * The owner's sign-up, login and logout, the password reset and the address confirmation
 * (e-mailed links), under /dashboard.
 */
import type { FastifyInstance } from 'fastify';
import { acting } from '../../acting.ts';
import { AppError } from '../../../errors/catalogue.ts';
import { requestPasswordReset, resetLinkIsLive, resetPassword, sendVerificationLink, verifyOwnerEmail } from '../../../services/auth/owner-links.ts';
import { checkNewPassword, logInOwner, signUpOwner } from '../../../services/auth/owners.ts';
import { createSession, endSession } from '../../../services/auth/sessions.ts';
import { html } from '../../html.ts';
import { alert, csrfField, page } from '../layout.ts';
import { checkPreLoginToken, clearSessionCookie, field, loginHandler, preLoginToken, seeOther, setSessionCookie } from '../session-guard.ts';
import { state, type OwnerArea } from './owner-area.ts';

export function authPages(app: FastifyInstance, { ctx }: OwnerArea): void {
  const loginPage = (token: string, error?: string, email = '', notice?: string) =>
    page({
      title: 'Log in',
      area: 'owner',
      body: html`<section class="narrow">${alert(error)}${alert(notice, 'ok')}
<form method="post" action="/dashboard/login">${csrfField(token)}
<label for="email">E-mail</label><input id="email" name="email" type="email" autocomplete="username" required value="${email}">
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<div class="actions"><button type="submit">Log in</button></div></form>
<p><a href="/dashboard/forgot-password">Forgot password?</a></p>
${ctx.config.signup.mode === 'closed' ? '' : html`<p>No account yet? <a href="/dashboard/signup">Sign up</a>.</p>`}</section>`,
    });

  const closedPage = () =>
    page({
      title: 'Sign up',
      area: 'owner',
      body: html`<section class="narrow"><p id="signup-closed">Sign-up is closed on this installation: the operator creates accounts. Ask them for one.</p>
<p>Already have an account? <a href="/dashboard/login">Log in</a>.</p></section>`,
    });

  const checkEmailPage = (email: string) =>
    page({
      title: 'Check your e-mail',
      area: 'owner',
      body: html`<section class="narrow"><p class="alert ok" role="status" id="check-email">We have sent a mail to ${email}. Follow its link to confirm the address; you can log in meanwhile, and create API keys and Sender IDs once it is confirmed.</p>
<p><a href="/dashboard/login">Log in</a></p></section>`,
    });

  const signupPage = (token: string, error?: string, values: { name?: string; email?: string } = {}) =>
    page({
      title: 'Sign up',
      area: 'owner',
      body: html`<section class="narrow">${alert(error)}
<form method="post" action="/dashboard/signup">${csrfField(token)}
<label for="name">Company or project name</label><input id="name" name="name" type="text" autocomplete="organization" required maxlength="100" value="${values.name ?? ''}">
<label for="email">E-mail</label><input id="email" name="email" type="email" autocomplete="username" required maxlength="254" value="${values.email ?? ''}">
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="new-password" required minlength="12" aria-describedby="password-hint">
<p class="hint" id="password-hint">At least 12 characters.</p>
${ctx.config.signup.mode === 'verify' ? html`<p class="hint">We e-mail you a link to confirm the address; API keys and Sender IDs wait until you follow it.</p>` : ''}
<div class="actions"><button type="submit">Create account</button></div></form>
<p>Already signed up? <a href="/dashboard/login">Log in</a>.</p></section>`,
    });

  app.get('/login', { config: { public: true } }, async (request, reply) =>
    reply.type('text/html; charset=utf-8').send(loginPage(preLoginToken(ctx, request, reply))),
  );

  app.post('/login', { config: { public: true } }, loginHandler(ctx, 'owner', (email, password, ip) => logInOwner(ctx, email, password, ip), '/dashboard', loginPage));

  app.get('/signup', { config: { public: true } }, async (request, reply) =>
    reply.type('text/html; charset=utf-8').send(ctx.config.signup.mode === 'closed' ? closedPage() : signupPage(preLoginToken(ctx, request, reply))),
  );

  app.post('/signup', { config: { public: true } }, async (request, reply) => {
    checkPreLoginToken(request, field(request.body, '_csrf'));
    // Echoed into the form again, so cut to what the form allows.
    const values = { name: field(request.body, 'name').slice(0, 100), email: field(request.body, 'email').slice(0, 254) };
    try {
      const result = await signUpOwner(ctx, { name: field(request.body, 'name'), email: field(request.body, 'email'), password: field(request.body, 'password') }, request.ip);
      if (result.outcome === 'check_email') return reply.type('text/html; charset=utf-8').send(checkEmailPage(result.email));
      const { token } = await createSession(ctx, 'owner', result.owner.id);
      setSessionCookie(ctx, reply, 'owner', token);
      return seeOther(reply, '/dashboard');
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      if (err.code === 'signup_closed') return reply.code(err.status).type('text/html; charset=utf-8').send(closedPage());
      if (!['invalid_request', 'email_taken', 'rate_limit_exceeded', 'service_unavailable'].includes(err.code)) throw err;
      if (err.headers) reply.headers(err.headers);
      return reply.code(err.status).type('text/html; charset=utf-8').send(signupPage(preLoginToken(ctx, request, reply), err.message, values));
    }
  });

  // Password reset and address confirmation (e-mailed links).

  const forgotPage = (token: string, opts: { error?: string; sent?: boolean } = {}) =>
    page({
      title: 'Forgot password',
      area: 'owner',
      body: html`<section class="narrow">${alert(opts.error)}${
        opts.sent
          ? html`<p class="alert ok" role="status" id="reset-sent">If an account has that address, a mail with a link to choose a new password is on its way. The link works once, for 30 minutes.</p>`
          : ''
      }
<form method="post" action="/dashboard/forgot-password">${csrfField(token)}
<label for="email">E-mail</label><input id="email" name="email" type="email" autocomplete="username" required maxlength="254">
<div class="actions"><button type="submit">Send a reset link</button></div></form>
<p><a href="/dashboard/login">Log in</a></p></section>`,
    });

  const resetPage = (csrf: string, token: string, error?: string) =>
    page({
      title: 'Choose a new password',
      area: 'owner',
      body: html`<section class="narrow">${alert(error)}
<form method="post" action="/dashboard/reset-password">${csrfField(csrf)}<input type="hidden" name="token" value="${token}">
<label for="password">New password</label><input id="password" name="password" type="password" autocomplete="new-password" required minlength="12" aria-describedby="password-hint">
<p class="hint" id="password-hint">At least 12 characters. Every session of yours is logged out.</p>
<div class="actions"><button type="submit">Set the new password</button></div></form></section>`,
    });

  const deadLinkPage = () =>
    page({
      title: 'Link expired',
      area: 'owner',
      body: html`<section class="narrow"><p class="alert error" role="alert">This link has expired or has already been used.</p>
<p><a href="/dashboard/forgot-password">Ask for a new reset link</a> · <a href="/dashboard/login">Log in</a></p></section>`,
    });

  app.get('/forgot-password', { config: { public: true } }, async (request, reply) =>
    reply.type('text/html; charset=utf-8').send(forgotPage(preLoginToken(ctx, request, reply))),
  );

  app.post('/forgot-password', { config: { public: true } }, async (request, reply) => {
    checkPreLoginToken(request, field(request.body, '_csrf'));
    try {
      await requestPasswordReset(ctx, field(request.body, 'email'), request.ip);
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'rate_limit_exceeded') throw err;
      if (err.headers) reply.headers(err.headers);
      return reply.code(err.status).type('text/html; charset=utf-8').send(forgotPage(preLoginToken(ctx, request, reply), { error: err.message }));
    }
    // The same answer whether or not the address has an account.
    return reply.type('text/html; charset=utf-8').send(forgotPage(preLoginToken(ctx, request, reply), { sent: true }));
  });

  app.get<{ Querystring: { token?: string } }>('/reset-password', { config: { public: true } }, async (request, reply) => {
    const token = typeof request.query.token === 'string' ? request.query.token : '';
    reply.header('referrer-policy', 'no-referrer');
    if (!(await resetLinkIsLive(ctx, token))) return reply.code(400).type('text/html; charset=utf-8').send(deadLinkPage());
    return reply.type('text/html; charset=utf-8').send(resetPage(preLoginToken(ctx, request, reply), token));
  });

  app.post('/reset-password', { config: { public: true } }, async (request, reply) => {
    checkPreLoginToken(request, field(request.body, '_csrf'));
    const token = field(request.body, 'token');
    try {
      await resetPassword(acting(ctx, request), token, field(request.body, 'password'), checkNewPassword);
    } catch (err) {
      if (!(err instanceof AppError) || !['invalid_request', 'service_unavailable'].includes(err.code)) throw err;
      if (err.headers) reply.headers(err.headers);
      if (!(await resetLinkIsLive(ctx, token))) return reply.code(400).type('text/html; charset=utf-8').send(deadLinkPage());
      return reply.code(err.status).type('text/html; charset=utf-8').send(resetPage(preLoginToken(ctx, request, reply), token, err.message));
    }
    clearSessionCookie(ctx, reply, 'owner');
    return reply.type('text/html; charset=utf-8').send(loginPage(preLoginToken(ctx, request, reply), undefined, '', 'Your password was changed; log in with the new one.'));
  });

  app.get<{ Querystring: { token?: string } }>('/verify', { config: { public: true } }, async (request, reply) => {
    reply.header('referrer-policy', 'no-referrer');
    try {
      await verifyOwnerEmail(ctx, typeof request.query.token === 'string' ? request.query.token : '');
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'invalid_request') throw err;
      return reply.code(400).type('text/html; charset=utf-8').send(deadLinkPage());
    }
    return reply.type('text/html; charset=utf-8').send(
      page({
        title: 'Address confirmed',
        area: 'owner',
        body: html`<section class="narrow"><p class="alert ok" role="status" id="verified">Your e-mail address is confirmed: you can now create API keys and register Sender IDs.</p><p><a href="/dashboard">Go to the dashboard</a></p></section>`,
      }),
    );
  });

  app.post('/verify/resend', async (request, reply) => {
    const { owner } = state(request);
    if (owner.email_verified_at == null) await sendVerificationLink(ctx, owner);
    return seeOther(reply, '/dashboard');
  });

  app.post('/logout', async (request, reply) => {
    await endSession(ctx, state(request).session.id);
    clearSessionCookie(ctx, reply, 'owner');
    return seeOther(reply, '/dashboard/login');
  });
}
