/**
 * Settings → Numbers and events (owner area): the phone numbers assigned to the account, the reply
 * to HELP, and its events URL, where the account's own events (`sms.received`, `recipient.opted_out`,
 * `recipient.opted_in`) are POSTed
 * (DECISIONS.md §8). Registered inside the owner area's scope (owner-pages.ts), behind its session
 * guard and CSRF check; calls services only.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { acting } from '../../acting.ts';
import { AppError } from '../../../errors/catalogue.ts';
import type { OwnerWithAccount } from '../../../services/auth/owners.ts';
import { setEventsUrl } from '../../../services/accounts/events-url.ts';
import { listNumbers } from '../../../services/numbers/numbers.ts';
import { defaultReply, MAX_HELP_TEXT, setHelpText } from '../../../services/opt-outs/opt-outs.ts';
import type { Context } from '../../../services/context.ts';
import { html, type Html } from '../../html.ts';
import { alert, csrfField, table, when } from '../layout.ts';
import { field, seeOther } from '../session-guard.ts';

export interface OwnerPageKit {
  /** The signed-in owner's account (read for this request) and session's CSRF token. */
  account(request: FastifyRequest): { account: OwnerWithAccount['account']; csrf: string };
  render(request: FastifyRequest, reply: FastifyReply, title: string, current: string, body: Html): unknown;
  /** The settings tabs with `current` marked. */
  tabs(current: string): Html;
}

export const EVENTS_SETTINGS_PATH = '/settings/events';

export function eventsSettingsPages(app: FastifyInstance, ctx: Context, kit: OwnerPageKit): void {
  const eventsPage = async (request: FastifyRequest, reply: FastifyReply, message?: { text: string; kind: 'ok' | 'error' }, typed?: string) => {
    const { account, csrf } = kit.account(request);
    const numbers = await listNumbers(ctx, { accountId: account.id });
    const rows = numbers.map((n) => [html`<code>${n.number}</code>`, n.label ?? '', when(Number(n.created_at))]);
    const current = account.events_url;
    return kit.render(
      request,
      reply,
      'Numbers and events',
      'settings',
      html`${kit.tabs('events')}${message ? alert(message.text, message.kind) : html``}
<section><h2>Numbers</h2>
<p>Phone numbers the operator assigned to this account. Send from one by giving it as <code>from</code>; messages sent to it arrive in the API (<code>GET /v1/sms/inbound</code>) and as <code>sms.received</code> events.</p>
${table('Numbers', ['Number', 'Label', 'Assigned'], rows, 'No numbers yet: ask the operator to assign one (pigeon number assign).')}</section>
<section><h2>Events URL</h2>
<p>Events that belong to no send request (<code>sms.received</code>: a message came to one of your numbers; <code>recipient.opted_out</code> and <code>recipient.opted_in</code>: a recipient replied STOP or START, or the opt-out list changed) are POSTed here, signed with the webhook secret and retried like delivery webhooks. HTTPS only.</p>
<p id="events-url-current">${current ? html`Current: <code>${current}</code>` : html`<span class="muted">Not set: these events are not sent.</span>`}</p>
<form method="post" action="/dashboard${EVENTS_SETTINGS_PATH}">${csrfField(csrf)}
<label for="events-url">URL</label>
<input id="events-url" name="url" type="url" required maxlength="2048" placeholder="https://example.com/pigeon/events" value="${typed ?? current ?? ''}">
<button type="submit">Save</button></form>
${current ? html`<form method="post" action="/dashboard${EVENTS_SETTINGS_PATH}/clear" data-confirm="Stop sending these events?">${csrfField(csrf)}<button type="submit" class="secondary">Clear</button></form>` : html``}
</section>
<section><h2>Reply to HELP</h2>
<p>A recipient who texts HELP or INFO to one of your numbers gets this reply (free, at most 5 confirmations a day per recipient and number). STOP and START are confirmed with fixed texts. Leave it empty for the default: <q>${defaultReply('help', account.name)}</q></p>
<form method="post" action="/dashboard${EVENTS_SETTINGS_PATH}/help">${csrfField(csrf)}
<label for="help-text">Help text</label>
<textarea id="help-text" name="help_text" maxlength="${MAX_HELP_TEXT}" rows="3">${account.help_text ?? ''}</textarea>
<button type="submit">Save</button></form></section>`,
    );
  };

  app.get(EVENTS_SETTINGS_PATH, async (request, reply) => {
    const saved = (request.query as Record<string, unknown> | undefined)?.saved;
    return eventsPage(request, reply, saved === '1' ? { text: 'The events URL was saved.', kind: 'ok' } : saved === '0' ? { text: 'The events URL was cleared.', kind: 'ok' } : saved === 'help' ? { text: 'The help text was saved.', kind: 'ok' } : undefined);
  });
  app.post(EVENTS_SETTINGS_PATH, async (request, reply) => {
    const { account } = kit.account(request);
    const url = field(request.body, 'url').trim();
    try {
      await setEventsUrl(acting(ctx, request), account.id, url);
    } catch (err) {
      if (err instanceof AppError && err.status < 500) {
        reply.code(err.status);
        return eventsPage(request, reply, { text: err.message, kind: 'error' }, url.slice(0, 2048));
      }
      throw err;
    }
    return seeOther(reply, `/dashboard${EVENTS_SETTINGS_PATH}?saved=1`);
  });
  app.post(`${EVENTS_SETTINGS_PATH}/help`, async (request, reply) => {
    const { account } = kit.account(request);
    try {
      await setHelpText(acting(ctx, request), account.id, field(request.body, 'help_text'));
    } catch (err) {
      if (err instanceof AppError && err.status < 500) {
        reply.code(err.status);
        return eventsPage(request, reply, { text: err.message, kind: 'error' });
      }
      throw err;
    }
    return seeOther(reply, `/dashboard${EVENTS_SETTINGS_PATH}?saved=help`);
  });
  app.post(`${EVENTS_SETTINGS_PATH}/clear`, async (request, reply) => {
    await setEventsUrl(acting(ctx, request), kit.account(request).account.id, null);
    return seeOther(reply, `/dashboard${EVENTS_SETTINGS_PATH}?saved=0`);
  });
}
