/**
 * The account owner's area, under /dashboard: sign-up and login, the overview, Settings → API
 * Keys, Sender IDs (with verification documents), Messages, Credits, the webhook signing secret
 * and the password. Every page calls services; none touches the store.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { checkSenderIdName, DEFAULT_RESERVED_SENDER_NAMES } from '../../domain/sender-id-name.ts';
import { MESSAGE_STATUSES, type MessageStatus } from '../../domain/message-status.ts';
import { AppError } from '../../errors/catalogue.ts';
import { rotateWebhookSecret, WEBHOOK_SECRET_OVERLAP_MS } from '../../services/accounts/accounts.ts';
import { accountMayUseApi } from '../../services/auth/access.ts';
import { createApiKey, listApiKeys, revokeApiKey, SCOPES, type CreatedKey } from '../../services/keys/api-keys.ts';
import type { Context } from '../../services/context.ts';
import { downloadFilename, getSenderIdDocument, listSenderIdDocuments, MAX_DOCUMENTS_PER_UPLOAD } from '../../services/sender-ids/documents.ts';
import { requestPasswordReset, resetLinkIsLive, resetPassword, sendVerificationLink, verifyOwnerEmail } from '../../services/auth/owner-links.ts';
import { assertOwnerVerified, changeOwnerPassword, checkNewPassword, getOwnerWithAccount, logInOwner, signUpOwner, type OwnerWithAccount } from '../../services/auth/owners.ts';
import { dailyMessageStats, listCreditLedger, listDeliveryReports, messageDetail } from '../../services/messages/reports.ts';
import { newKeyFormNonce, useKeyFormNonce } from '../../services/keys/key-form-nonce.ts';
import { onboardingSteps, type OnboardingStepId } from '../../services/accounts/onboarding.ts';
import { listSenderIds, registerSenderId } from '../../services/sender-ids/sender-ids.ts';
import { createSession, endSession, type Session } from '../../services/auth/sessions.ts';
import { html, raw, type Html } from '../html.ts';
import { alert, csrfField, formatBytes, page, statusBadge, table, when } from './layout.ts';
import { eventsSettingsPages } from './events-settings-pages.ts';
import { twoWayPages } from './two-way-pages.ts';
import {
  checkPreLoginToken,
  clearSessionCookie,
  field,
  fields,
  formParts,
  loginHandler,
  preLoginToken,
  seeOther,
  sessionGuard,
  setSessionCookie,
} from './session-guard.ts';

interface OwnerRequestState extends OwnerWithAccount {
  session: Session;
}

declare module 'fastify' {
  interface FastifyRequest {
    owner?: OwnerRequestState;
  }
}

function state(request: FastifyRequest): OwnerRequestState {
  if (!request.owner) throw new Error('owner page reached without a session');
  return request.owner;
}

const PAGE_SIZE = 25;

function pageNumber(raw: unknown): number {
  const n = typeof raw === 'string' && /^\d{1,6}$/.test(raw) ? Number(raw) : 1;
  return Math.max(1, n);
}

export function ownerPages(ctx: Context) {
  return async (app: FastifyInstance) => {
    app.decorateRequest('owner', undefined);

    app.addHook(
      'preHandler',
      sessionGuard(ctx, 'owner', (id) => getOwnerWithAccount(ctx, id), (request, session, found) => {
        request.owner = { session, ...found };
      }),
    );

    const render = (request: FastifyRequest, reply: FastifyReply, title: string, current: string, body: Html, scripts?: string[]) => {
      const s = state(request);
      const suspended = !accountMayUseApi(s.account.status) ? alert('This account is suspended: the API refuses its keys. Contact the operator.') : html``;
      const unverified =
        s.owner.email_verified_at == null
          ? html`<div class="alert error" role="alert" id="unverified">Confirm your e-mail address: follow the link we sent to ${s.owner.email}. Until then you cannot create API keys or register Sender IDs.
<form method="post" action="/dashboard/verify/resend" class="inline">${csrfField(s.session.csrf_token)}<button type="submit" class="secondary">Send the link again</button></form></div>`
          : html``;
      return reply.type('text/html; charset=utf-8').send(
        page({ title, area: 'owner', current, session: { csrf: s.session.csrf_token, who: s.owner.email }, body: html`${suspended}${unverified}${body}`, scripts }),
      );
    };

    // ---- Sign-up, login, logout -------------------------------------------------------------

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

    // ---- Password reset and address confirmation (e-mailed links) ---------------------------

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
        await resetPassword(ctx, token, field(request.body, 'password'), checkNewPassword);
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

    // ---- Overview ---------------------------------------------------------------------------

    /** The first steps, shown on the overview until every one is done. */
    const checklist = async (account: OwnerRequestState['account']): Promise<Html> => {
      const { steps, credits } = await onboardingSteps(ctx, account.id);
      const done = steps.filter((st) => st.done).length;
      if (done === steps.length) return html``;
      const simulator = ctx.config.carrier === 'simulator';
      const text: Record<OnboardingStepId, { title: Html; todo: Html; ok: Html }> = {
        credits: {
          title: html`Get credits`,
          todo: html`The balance is ${credits} credits and every message segment costs one. Credits are added by the operator of this Pigeon server: ask them for a top-up (<code>pigeon credits add ${account.id} AMOUNT</code>).`,
          ok: html`Balance: ${credits.toLocaleString('en')} credits (<a href="/dashboard/credits">ledger</a>).`,
        },
        'sender-id': {
          title: html`Register a Sender ID`,
          todo: html`The name your messages come from. <a href="/dashboard/sender-ids">Register one</a>; the operator reviews it.`,
          ok: html`An approved Sender ID can go in <code>from</code>.`,
        },
        'api-key': {
          title: html`Generate an API key`,
          todo: html`<a href="/dashboard/settings/api-keys">Generate a key</a> for your application; it is shown once.`,
          ok: html`Your application authenticates with it (<a href="/dashboard/settings/api-keys">keys</a>).`,
        },
        'first-send': {
          title: simulator ? html`Send a test message to the simulator` : html`Send a first message`,
          todo: simulator
            ? html`This server uses the built-in carrier simulator: nothing reaches a phone. Numbers ending in <code>0000</code> fail, <code>2222</code> are rejected, any other is delivered. The <a href="/docs/guides/quick-start">quick start</a> has the <code>curl</code> command.`
            : html`The <a href="/docs/guides/quick-start">quick start</a> has the <code>curl</code> command.`,
          ok: html`See it in <a href="/dashboard/messages">Messages</a>.`,
        },
        webhook: {
          title: html`Receive a delivery webhook`,
          todo: html`Give a send an HTTPS <code>callback_url</code> and Pigeon posts each status change to it; see the <a href="/docs/guides/webhooks">webhooks guide</a>.`,
          ok: html`Your receiver answered a signed event.`,
        },
      };
      return html`<section class="checklist" aria-labelledby="checklist-title"><h2 id="checklist-title">Getting started: ${done} of ${steps.length} done</h2>
<ol>${steps.map((st) => {
        const t = text[st.id];
        const kind = st.done ? 'done' : st.waiting ? 'waiting' : 'todo';
        const mark = st.done ? '✓' : st.waiting ? '…' : '';
        const label = st.done ? 'Done' : st.waiting ? 'Waiting for review' : 'To do';
        return html`<li class="step step-${kind}" data-step="${st.id}" data-state="${kind}"><span class="mark" aria-hidden="true">${mark}</span><span class="visually-hidden">${label}: </span><strong>${t.title}</strong> <span class="hint">${st.waiting ? html`Waiting for the operator's review (<a href="/dashboard/sender-ids">Sender IDs</a>).` : st.done ? t.ok : t.todo}</span></li>`;
      })}</ol></section>`;
    };

    app.get('/', async (request, reply) => {
      const { account } = state(request);
      const start = await checklist(account);
      const stats = await dailyMessageStats(ctx, account.id, 30);
      const total = (s: MessageStatus) => stats.counts[s].reduce((a, b) => a + b, 0);
      const rate = stats.deliveryRate === null ? '–' : `${(stats.deliveryRate * 100).toFixed(1)} %`;
      // The chart data goes into a JSON script element; `<` is escaped so that no text can close it.
      const json = JSON.stringify(stats).replace(/</g, '\\u003c');
      return render(
        request,
        reply,
        'Overview',
        'overview',
        html`${start}<div class="stats">
<div class="stat"><span>Credit balance</span><strong id="balance">${Number(account.credits).toLocaleString('en')}</strong><a href="/dashboard/credits">Ledger</a></div>
<div class="stat"><span>Delivery rate, 30 days</span><strong id="delivery-rate">${rate}</strong><span class="muted">delivered of delivered + failed</span></div>
<div class="stat"><span>Messages, 30 days</span><strong>${MESSAGE_STATUSES.reduce((a, s) => a + total(s), 0)}</strong><span class="muted">${MESSAGE_STATUSES.map((s) => `${s} ${total(s)}`).join(' · ')}</span></div>
</div>
<section><h2 id="chart-title">Messages per day by status (last 30 days, UTC)</h2>
<div id="chart" role="img" aria-labelledby="chart-title"></div>
<script type="application/json" id="chart-data">${raw(json)}</script>
<p class="hint">Account <code>${account.id}</code> · ${account.name} · ${statusBadge(account.status)}</p></section>`,
        ['uPlot.min.css', 'uPlot.iife.min.js'],
      );
    });

    // ---- Settings → API Keys ----------------------------------------------------------------

    const keysPage = async (request: FastifyRequest, reply: FastifyReply, opts: { created?: CreatedKey; error?: string; label?: string } = {}) => {
      const { account, session } = state(request);
      const keys = await listApiKeys(ctx, account.id);
      const nonce = await newKeyFormNonce(ctx, session.id);
      const created = opts.created
        ? html`<section class="card" aria-labelledby="new-key-title"><h2 id="new-key-title">New key “${opts.created.label}”</h2>
<p><strong>Copy this key now: it is shown only once.</strong> Pigeon keeps only a digest of it.</p>
<code class="secret" id="new-key">${opts.created.key}</code>
<button type="button" class="secondary" data-copy="new-key" aria-label="Copy the new API key">Copy</button></section>`
        : html``;
      const rows = keys.map((k) => [
        k.label,
        html`<code class="nowrap">${k.prefix}…</code>`,
        html`${k.scopes.map((s) => html`<code>${s}</code> `)}`,
        when(k.created_at),
        when(k.last_used_at),
        k.revoked_at !== null
          ? html`${statusBadge('revoked')} ${when(k.revoked_at)}`
          : html`<form method="post" action="/dashboard/settings/api-keys/${k.id}/revoke" class="inline" data-confirm="Revoke the key “${k.label}”? Applications using it stop working at once.">${csrfField(session.csrf_token)}<button type="submit" class="danger" aria-label="Revoke the key ${k.label}">Revoke</button></form>`,
      ]);
      return render(
        request,
        reply,
        'API Keys',
        'settings',
        html`${settingsTabs('api-keys')}${alert(opts.error)}${created}
<section><h2>Generate New Key</h2>
<form method="post" action="/dashboard/settings/api-keys">${csrfField(session.csrf_token)}<input type="hidden" name="nonce" value="${nonce}">
<label for="label">Label</label><input id="label" name="label" type="text" required maxlength="100" placeholder="e.g. Production server" value="${opts.label ?? ''}" aria-describedby="label-hint">
<p class="hint" id="label-hint">A description that tells you where the key is used.</p>
<fieldset><legend>Scopes</legend>${SCOPES.map((s) => html`<label><input type="checkbox" name="scopes" value="${s}" checked> <code>${s}</code></label>`)}</fieldset>
<div class="actions"><button type="submit">Generate New Key</button></div></form></section>
${table('Your API keys', ['Label', 'Prefix', 'Scopes', 'Created', 'Last used', 'Status'], rows, 'No keys yet.')}`,
      );
    };

    app.get('/settings', async (_request, reply) => seeOther(reply, '/dashboard/settings/api-keys'));
    app.get('/settings/api-keys', async (request, reply) => keysPage(request, reply));

    app.post('/settings/api-keys', async (request, reply) => {
      const label = field(request.body, 'label');
      const scopes = fields(request.body, 'scopes');
      // A reload of the page that showed a new key posts the same form again: nothing is created.
      const use = await useKeyFormNonce(ctx, state(request).session.id, field(request.body, 'nonce'));
      if (use !== 'fresh') {
        reply.code(409).header('cache-control', 'no-store');
        return keysPage(request, reply, {
          error:
            use === 'used'
              ? 'This form was already sent and its key was shown once; Pigeon keeps no copy, so it cannot be shown again, and no new key was created. If you did not copy it, revoke it below and generate another.'
              : 'This form is out of date (a newer one was opened); no key was created. Generate the key again below.',
        });
      }
      try {
        assertOwnerVerified(state(request).owner);
        if (scopes.length === 0) throw new AppError('invalid_request', 'Choose at least one scope.');
        const created = await createApiKey(ctx, state(request).account.id, { label, scopes });
        reply.header('cache-control', 'no-store');
        return keysPage(request, reply, { created });
      } catch (err) {
        if (!(err instanceof AppError) || !['invalid_request', 'email_not_verified'].includes(err.code)) throw err;
        reply.code(err.status);
        return keysPage(request, reply, { error: err.message, label });
      }
    });

    app.post<{ Params: { id: string } }>('/settings/api-keys/:id/revoke', async (request, reply) => {
      await revokeApiKey(ctx, request.params.id, state(request).account.id);
      return seeOther(reply, '/dashboard/settings/api-keys');
    });

    // ---- Settings → Webhook secret, Password ------------------------------------------------

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

    twoWayPages(app, ctx, { account: (request) => ({ account: state(request).account, csrf: state(request).session.csrf_token }), render });
    eventsSettingsPages(app, ctx, {
      account: (request) => ({ account: state(request).account, csrf: state(request).session.csrf_token }),
      render,
      tabs: (current) => settingsTabs(current as 'events'),
    });

    app.get('/settings/webhook', async (request, reply) => webhookPage(request, reply, false));
    app.post('/settings/webhook/reveal', async (request, reply) => webhookPage(request, reply, true));
    app.post('/settings/webhook/rotate', async (request, reply) => {
      const s = state(request);
      s.account = await rotateWebhookSecret(ctx, s.account.id);
      return webhookPage(request, reply, true, 'The secret was rotated.');
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
        await changeOwnerPassword(ctx, s.owner.id, field(request.body, 'current'), field(request.body, 'next'), request.ip, s.session.id);
      } catch (err) {
        if (!(err instanceof AppError) || !['invalid_request', 'invalid_credentials', 'login_locked', 'service_unavailable'].includes(err.code)) throw err;
        if (err.headers) reply.headers(err.headers);
        reply.code(err.status);
        return passwordPage(request, reply, { text: err.message, kind: 'error' });
      }
      return passwordPage(request, reply, { text: 'Your password was changed.', kind: 'ok' });
    });

    // ---- Sender IDs -------------------------------------------------------------------------

    const reserved = () => [...DEFAULT_RESERVED_SENDER_NAMES, ...ctx.config.reservedSenderNames];

    const senderIdsPage = async (request: FastifyRequest, reply: FastifyReply, opts: { error?: string; notice?: string; name?: string } = {}) => {
      const { account, session } = state(request);
      const senders = await listSenderIds(ctx, { accountId: account.id });
      const docs = await listSenderIdDocuments(ctx, senders.map((s) => s.id));
      const rows = senders.map((s) => [
        html`<strong>${s.name}</strong>`,
        statusBadge(s.status),
        s.review_note ? html`<span class="note">${s.review_note}</span>` : html`<span class="muted">–</span>`,
        (docs.get(s.id) ?? []).map((d) => html`<a href="/dashboard/sender-ids/documents/${d.id}">${d.filename}</a> <span class="muted">(${formatBytes(Number(d.size))})</span><br>`),
        when(s.created_at),
      ]);
      return render(
        request,
        reply,
        'Sender IDs',
        'sender-ids',
        html`${alert(opts.error)}${alert(opts.notice, 'ok')}
<section><h2>Register a Sender ID</h2>
<form method="post" action="/dashboard/sender-ids" enctype="multipart/form-data">${csrfField(session.csrf_token)}
<label for="sender-name">Name</label>
<input id="sender-name" name="name" type="text" required maxlength="11" autocomplete="off" value="${opts.name ?? ''}" aria-describedby="name-check name-rules"
  hx-get="/dashboard/sender-ids/check" hx-trigger="input changed delay:200ms" hx-target="#name-check">
<p class="hint" id="name-rules">1 to 11 letters A-Z, a-z and digits 0-9; no spaces or punctuation. Reserved names (banks, government, big brands) are refused.</p>
<p id="name-check" aria-live="polite"></p>
<label for="documents">Verification documents (optional)</label>
<input id="documents" name="documents" type="file" multiple accept=".pdf,.png,.jpg,.jpeg,application/pdf,image/png,image/jpeg" aria-describedby="documents-hint">
<p class="hint" id="documents-hint">PDF, PNG or JPEG, up to 10 MiB each, at most ${MAX_DOCUMENTS_PER_UPLOAD}: for example a trade-register extract or a trademark certificate.</p>
<div class="actions"><button type="submit">Register</button></div></form>
<p class="hint">New Sender IDs are Pending until an operator reviews them; you are told by e-mail.</p></section>
${table('Your Sender IDs', ['Name', 'Status', 'Reviewer’s note', 'Documents', 'Registered'], rows, 'No Sender IDs yet.')}`,
      );
    };

    app.get('/sender-ids', async (request, reply) => senderIdsPage(request, reply));

    app.get<{ Querystring: { name?: string } }>('/sender-ids/check', async (request, reply) => {
      const name = typeof request.query.name === 'string' ? request.query.name : '';
      reply.type('text/html; charset=utf-8');
      if (name === '') return '';
      const check = checkSenderIdName(name, reserved());
      return check.ok
        ? html`<span class="check-ok">✓ ${name} can be registered.</span>`.text
        : html`<span class="check-bad">✗ ${check.reason}</span>`.text;
    });

    app.post('/sender-ids', async (request, reply) => {
      const { account } = state(request);
      assertOwnerVerified(state(request).owner);
      const values: Record<string, string> = {};
      const files: { filename: string; bytes: Buffer }[] = [];
      try {
        for await (const part of formParts(request)) {
          if (part.type === 'file') {
            const bytes = await part.toBuffer();
            // An empty file input still sends one part with no name and no bytes.
            if (part.filename || bytes.length > 0) files.push({ filename: part.filename, bytes });
          } else if (typeof part.value === 'string') {
            values[part.fieldname] = part.value;
          }
        }
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code === 'FST_REQ_FILE_TOO_LARGE') throw new AppError('invalid_document', 'A document is larger than 10 MiB.');
        if (code === 'FST_FILES_LIMIT') throw new AppError('invalid_document', `At most ${MAX_DOCUMENTS_PER_UPLOAD} documents at a time.`);
        // Anything else here is a malformed multipart body (cut short, bad part headers).
        throw new AppError('invalid_request', 'The upload could not be read; please try again.');
      }
      const name = (values.name ?? '').trim();
      try {
        // The Sender ID and its documents are stored together or not at all (quotas included).
        await registerSenderId(ctx, account.id, name, files);
      } catch (err) {
        if (!(err instanceof AppError) || (err.status !== 400 && err.code !== 'quota_exceeded')) throw err;
        reply.code(err.status);
        return senderIdsPage(request, reply, { error: err.message, name });
      }
      return seeOther(reply, '/dashboard/sender-ids');
    });

    app.get<{ Params: { id: string } }>('/sender-ids/documents/:id', async (request, reply) => {
      const doc = await getSenderIdDocument(ctx, request.params.id, state(request).account.id);
      return sendDocument(reply, doc);
    });

    // ---- Messages ---------------------------------------------------------------------------

    app.get<{ Querystring: Record<string, string | undefined> }>('/messages', async (request, reply) => {
      const { account } = state(request);
      // A key given twice arrives as an array; the first value counts, as in the API.
      const q = Object.fromEntries(Object.entries(request.query).map(([k, v]) => [k, Array.isArray(v) ? v[0] : v])) as Record<string, string | undefined>;
      const status = MESSAGE_STATUSES.includes(q.status as MessageStatus) ? (q.status as MessageStatus) : undefined;
      const messageId = q.message_id?.trim() || undefined;
      const batchId = q.batch_id?.trim() || undefined;
      const pageNo = pageNumber(q.page);
      const { rows, total } = await listDeliveryReports(ctx, { accountId: account.id, messageId, batchId, status }, pageNo, PAGE_SIZE);
      const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
      const link = (p: number) => {
        const params = new URLSearchParams();
        if (messageId) params.set('message_id', messageId);
        if (batchId) params.set('batch_id', batchId);
        if (status) params.set('status', status);
        params.set('page', String(p));
        return `/dashboard/messages?${params}`;
      };
      const tableRows = rows.map((m) => [
        html`<a href="/dashboard/messages/${m.id}"><code>${m.id}</code></a>`,
        m.recipient,
        m.sender,
        statusBadge(m.status),
        m.segments,
        when(m.created_at),
        m.error_code ? html`<code>${m.error_code}</code>` : html`<span class="muted">–</span>`,
      ]);
      return render(
        request,
        reply,
        'Messages',
        'messages',
        html`<section><form method="get" action="/dashboard/messages" class="filters" role="search" aria-label="Filter messages">
<div><label for="f-message">Message ID</label><input id="f-message" name="message_id" type="text" value="${messageId ?? ''}"></div>
<div><label for="f-batch">Batch ID</label><input id="f-batch" name="batch_id" type="text" value="${batchId ?? ''}"></div>
<div><label for="f-status">Status</label><select id="f-status" name="status"><option value="">Any</option>${MESSAGE_STATUSES.map(
          (s) => html`<option value="${s}"${s === status ? raw(' selected') : ''}>${s}</option>`,
        )}</select></div>
<div class="actions"><button type="submit" class="secondary">Filter</button></div></form></section>
${table(`Delivery reports (${total})`, ['Message', 'To', 'From', 'Status', 'Segments', 'Created', 'Error'], tableRows, 'No messages match.')}
<nav class="pagination" aria-label="Pages">${pageNo > 1 ? html`<a href="${link(pageNo - 1)}" rel="prev">Previous</a>` : ''}<span>Page ${pageNo} of ${pages}</span>${
          pageNo < pages ? html`<a href="${link(pageNo + 1)}" rel="next">Next</a>` : ''
        }</nav>`,
      );
    });

    app.get<{ Params: { id: string } }>('/messages/:id', async (request, reply) => {
      const { message: m, events } = await messageDetail(ctx, state(request).account.id, request.params.id);
      const attempts = events.flatMap(({ event, attempts: list }) =>
        list.map((a) => [
          html`<code>${event.event}</code>`,
          a.attempt,
          when(a.attempted_at),
          a.http_status ?? html`<span class="muted">–</span>`,
          a.error ?? '',
          `${a.latency_ms} ms`,
        ]),
      );
      const eventRows = events.map(({ event }) => [html`<code>${event.event}</code>`, event.url, statusBadge(event.status), event.attempts, event.last_error ?? '']);
      return render(
        request,
        reply,
        `Message ${m.id}`,
        'messages',
        html`<section><dl class="detail">
<dt>Status</dt><dd id="message-status">${statusBadge(m.status)}</dd>
<dt>To</dt><dd>${m.recipient}</dd><dt>From</dt><dd>${m.sender}</dd>
<dt>Segments</dt><dd>${m.segments} (${m.encoding})</dd>
<dt>Batch</dt><dd>${m.batch_id ?? '–'}</dd>
<dt>Created</dt><dd>${when(m.created_at)}</dd><dt>Sent</dt><dd>${when(m.sent_at)}</dd><dt>Delivered</dt><dd>${when(m.delivered_at)}</dd>
${m.error_code ? html`<dt>Error</dt><dd><code>${m.error_code}</code> ${m.error_message ?? ''}</dd>` : ''}
<dt>Callback URL</dt><dd>${m.callback_url ?? '–'}</dd></dl></section>
${table('Webhook events', ['Event', 'URL', 'Status', 'Attempts', 'Last error'], eventRows, 'No webhook events (the message has no callback URL, or nothing has happened yet).')}
${attempts.length > 0 ? table('Webhook attempts', ['Event', 'Attempt', 'At', 'HTTP status', 'Error', 'Latency'], attempts, '') : ''}
<p><a href="/dashboard/messages">All messages</a></p>`,
      );
    });

    // ---- Credits ----------------------------------------------------------------------------

    app.get<{ Querystring: { page?: string } }>('/credits', async (request, reply) => {
      const { account } = state(request);
      const pageNo = pageNumber(request.query.page);
      const rows = await listCreditLedger(ctx, account.id, pageNo, PAGE_SIZE + 1);
      const more = rows.length > PAGE_SIZE;
      const ledgerRows = rows.slice(0, PAGE_SIZE).map((r) => [
        when(r.created_at),
        r.kind,
        html`<span class="${Number(r.amount) < 0 ? 'check-bad' : 'check-ok'}">${Number(r.amount) > 0 ? '+' : ''}${Number(r.amount)}</span>`,
        r.reference ? html`<code>${r.reference}</code>` : '',
        r.note ?? '',
      ]);
      return render(
        request,
        reply,
        'Credits',
        'credits',
        html`<div class="stats"><div class="stat"><span>Balance</span><strong id="credits-balance">${Number(account.credits).toLocaleString('en')}</strong><span class="muted">One credit per message segment. Top-ups are made by the operator.</span></div></div>
${table('Ledger', ['When', 'Kind', 'Amount', 'Reference', 'Note'], ledgerRows, 'No ledger entries yet.')}
<nav class="pagination" aria-label="Pages">${pageNo > 1 ? html`<a href="/dashboard/credits?page=${pageNo - 1}" rel="prev">Newer</a>` : ''}${
          more ? html`<a href="/dashboard/credits?page=${pageNo + 1}" rel="next">Older</a>` : ''
        }</nav>`,
      );
    });
  };
}

function settingsTabs(current: 'api-keys' | 'webhook' | 'events' | 'password'): Html {
  const tabs = [
    { key: 'api-keys', href: '/dashboard/settings/api-keys', label: 'API Keys' },
    { key: 'webhook', href: '/dashboard/settings/webhook', label: 'Webhook secret' },
    { key: 'events', href: '/dashboard/settings/events', label: 'Numbers and events' },
    { key: 'password', href: '/dashboard/settings/password', label: 'Password' },
  ];
  return html`<nav aria-label="Settings" class="tabs"><ul>${tabs.map(
    (t) => html`<li><a href="${t.href}"${t.key === current ? raw(' aria-current="page"') : ''}>${t.label}</a></li>`,
  )}</ul></nav>`;
}

/**
 * Sends a stored document as a download, never rendered inline by the browser: an attachment named
 * with the extension of its sniffed type (never the uploader's `.html`), no type sniffing, and a
 * sandbox in case a browser opens it anyway.
 */
export function sendDocument(reply: FastifyReply, doc: { filename: string; content_type: string; content: Buffer }) {
  const filename = downloadFilename(doc);
  return reply
    .type(doc.content_type)
    .header('content-disposition', `attachment; filename="${filename.replace(/[^\x20-\x7e]|"/g, '_')}"; filename*=UTF-8''${encodeURIComponent(filename)}`)
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', "sandbox; default-src 'none'")
    .send(doc.content);
}
