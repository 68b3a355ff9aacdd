/**
 * Settings → API Keys, /dashboard/settings/api-keys: generate (shown once), list and revoke keys.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { acting } from '../../acting.ts';
import { AppError } from '../../../errors/catalogue.ts';
import { createApiKey, listApiKeys, revokeApiKey, SCOPES, type CreatedKey } from '../../../services/keys/api-keys.ts';
import { assertOwnerVerified } from '../../../services/auth/owners.ts';
import { newKeyFormNonce, useKeyFormNonce } from '../../../services/keys/key-form-nonce.ts';
import { html } from '../../html.ts';
import { alert, csrfField, page, statusBadge, table, when } from '../layout.ts';
import { field, fields, seeOther } from '../session-guard.ts';
import { settingsTabs, state, type OwnerArea } from './owner-area.ts';

export function keysPages(app: FastifyInstance, { ctx, render }: OwnerArea): void {
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
      const created = await createApiKey(acting(ctx, request), state(request).account.id, { label, scopes });
      reply.header('cache-control', 'no-store');
      return keysPage(request, reply, { created });
    } catch (err) {
      if (!(err instanceof AppError) || !['invalid_request', 'email_not_verified'].includes(err.code)) throw err;
      reply.code(err.status);
      return keysPage(request, reply, { error: err.message, label });
    }
  });

  app.post<{ Params: { id: string } }>('/settings/api-keys/:id/revoke', async (request, reply) => {
    await revokeApiKey(acting(ctx, request), request.params.id, state(request).account.id);
    return seeOther(reply, '/dashboard/settings/api-keys');
  });
}
