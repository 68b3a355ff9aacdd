/**
 * Settings → Twilio-compatible API, /dashboard/settings/twilio (DECISIONS.md §12): the Account
 * SID, the Auth Token (made or rotated here, shown once), and the SMS URL of each of the
 * account's numbers, where messages to it are POSTed Twilio-style.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { acting } from '../../acting.ts';
import { AppError } from '../../../errors/catalogue.ts';
import { listNumbers } from '../../../services/numbers/numbers.ts';
import { twilioAccountSid, twilioCredentials, type TwilioCredentials } from '../../../services/twilio/credentials.ts';
import { setSmsUrl } from '../../../services/twilio/sms-urls.ts';
import { html } from '../../html.ts';
import { alert, csrfField, when } from '../layout.ts';
import { field } from '../session-guard.ts';
import { settingsTabs, state, type OwnerArea } from './owner-area.ts';

export function twilioPages(app: FastifyInstance, { ctx, render }: OwnerArea): void {
  const page = async (request: FastifyRequest, reply: FastifyReply, shown?: TwilioCredentials, message?: { text: string; kind: 'ok' | 'error' }) => {
    const { account, session } = state(request);
    const creds = shown ?? (await twilioAccountSid(ctx, account.id));
    const numbers = await listNumbers(ctx, { accountId: account.id });
    const csrf = csrfField(session.csrf_token);
    if (shown?.revealed) reply.header('cache-control', 'no-store');
    const credentials = creds
      ? html`<dl><dt>Account SID</dt><dd><code id="twilio-sid">${creds.account_sid}</code></dd>
<dt>Auth Token</dt><dd><code class="secret" id="twilio-token">${creds.auth_token}</code>${
          creds.revealed ? html`<button type="button" class="secondary" data-copy="twilio-token" aria-label="Copy the Auth Token">Copy</button>` : html``
        }</dd></dl>
${creds.revealed ? html`<p class="hint">Keep the token now: it is not shown in full again.</p>` : html``}
${creds.previous_valid_until !== null ? html`<p class="hint">The previous token keeps working until ${when(creds.previous_valid_until)}.</p>` : html``}
<form method="post" action="/dashboard/settings/twilio/rotate" data-confirm="Replace the Auth Token?">${csrf}<button type="submit" class="danger">Rotate token</button></form>`
      : html`<p>No credentials yet.</p><form method="post" action="/dashboard/settings/twilio/rotate">${csrf}<button type="submit">Create credentials</button></form>`;
    const rows = numbers.map(
      (n) => html`<form method="post" action="/dashboard/settings/twilio/sms-url">${csrf}<input type="hidden" name="number" value="${n.number}">
<label for="sms-url-${n.number}">SMS URL of <code>${n.number}</code></label>
<input id="sms-url-${n.number}" name="url" type="url" maxlength="2048" placeholder="https://example.com/sms" value="${n.sms_url ?? ''}">
<button type="submit">Save</button></form>`,
    );
    return render(
      request,
      reply,
      'Twilio-compatible API',
      'settings',
      html`${settingsTabs('twilio')}${message ? alert(message.text, message.kind) : html``}
<section><h2>Credentials</h2>
<p>Code written for Twilio's <code>twilio</code> packages sends through Pigeon with its base URL set to <code>${ctx.config.publicUrl}</code> and these credentials (an API key of this account works as the password too, with its scopes). Status callbacks and SMS URL posts are signed with the Auth Token (<code>X-Twilio-Signature</code>).</p>
${credentials}</section>
<section><h2>SMS URLs</h2>
<p>Messages to a number are POSTed Twilio-style to its SMS URL; a TwiML <code>&lt;Message&gt;</code> in the answer is sent back from the number (charged like any message). HTTPS only; leave empty for none.</p>
${numbers.length === 0 ? html`<p>No numbers yet: ask the operator to assign one.</p>` : html`${rows}`}</section>`,
    );
  };

  app.get('/settings/twilio', async (request, reply) => page(request, reply));
  app.post('/settings/twilio/rotate', async (request, reply) => {
    const { account } = state(request);
    const existed = (await twilioAccountSid(ctx, account.id)) !== null;
    const creds = await twilioCredentials(acting(ctx, request), account.id, { rotate: existed });
    return page(request, reply, creds, { text: existed ? 'The Auth Token was rotated.' : 'The credentials were created.', kind: 'ok' });
  });
  app.post('/settings/twilio/sms-url', async (request, reply) => {
    const { account } = state(request);
    const url = field(request.body, 'url').trim();
    try {
      await setSmsUrl(acting(ctx, request), account.id, field(request.body, 'number'), url === '' ? null : url);
    } catch (err) {
      if (err instanceof AppError && err.status < 500) {
        reply.code(err.status);
        return page(request, reply, undefined, { text: err.message, kind: 'error' });
      }
      throw err;
    }
    return page(request, reply, undefined, { text: url === '' ? 'The SMS URL was cleared.' : 'The SMS URL was saved.', kind: 'ok' });
  });
}
