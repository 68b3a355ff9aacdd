/**
 * Settings → SMPP, /dashboard/settings/smpp: the account's SMPP users (DECISIONS.md §10) with
 * their live binds (in every process) and what waits for a receiver bind, and where to bind. The
 * owner creates, rotates and deletes them here as the operator does with `pigeon smpp-user`; a
 * password is shown once (stored hashed), and, as for API keys, a reload of the page that showed
 * it posts nothing twice (the one-time form nonce).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { acting } from '../../acting.ts';
import { AppError } from '../../../errors/catalogue.ts';
import { assertOwnerVerified } from '../../../services/auth/owners.ts';
import { newKeyFormNonce, useKeyFormNonce } from '../../../services/keys/key-form-nonce.ts';
import {
  createSmppUser,
  DEFAULT_MAX_BINDS,
  DEFAULT_TPS,
  deleteSmppUser,
  listSmppUsers,
  MAX_MAX_BINDS,
  MAX_TPS,
  rotateSmppUser,
  type SmppUserWithPassword,
} from '../../../services/smpp-access/smpp-users.ts';
import { html } from '../../html.ts';
import { alert, csrfField, table, when } from '../layout.ts';
import { field, seeOther } from '../session-guard.ts';
import { settingsTabs, state, type OwnerArea } from './owner-area.ts';

interface PageOptions {
  shown?: { user: SmppUserWithPassword; rotated: boolean };
  error?: string;
  form?: { systemId: string; tps: string; maxBinds: string; allow: string };
}

/** A whole number field of the form; empty means the default. */
function wholeField(value: string, name: string): number | undefined {
  if (value.trim() === '') return undefined;
  if (!/^\d{1,6}$/.test(value.trim())) throw new AppError('invalid_request', `${name} is a whole number.`);
  return Number(value.trim());
}

export function smppPages(app: FastifyInstance, { ctx, render }: OwnerArea): void {
  const smppPage = async (request: FastifyRequest, reply: FastifyReply, opts: PageOptions = {}) => {
    const { account, session } = state(request);
    const users = await listSmppUsers(ctx, { accountId: account.id });
    const nonce = await newKeyFormNonce(ctx, session.id);
    const host = new URL(ctx.config.publicUrl).hostname;
    const port = ctx.config.smppServer.port;
    const where =
      port === 0
        ? html`<p>This installation does not accept SMPP binds (its operator has turned the listener off).</p>`
        : html`<p>Bind with SMPP 3.4 to <code>${host}:${String(port)}</code>${ctx.config.smppServer.tls ? html` (TLS: <code>${host}:${String(ctx.config.smppServer.tls.port)}</code>)` : html``} with a <code>system_id</code> below and its password. Sends over SMPP are charged and checked like API sends; receipts and messages to your numbers come back to your receiver and transceiver binds.</p>`;
    const shown = opts.shown
      ? html`<section class="card" aria-labelledby="smpp-password-title"><h2 id="smpp-password-title">${opts.shown.rotated ? 'New password' : 'Password'} of <code>${opts.shown.user.system_id}</code></h2>
<p><strong>Copy this password now: it is shown only once.</strong> Pigeon keeps only a hash of it.${opts.shown.rotated ? ' The previous password no longer works, and its binds have ended.' : ''}</p>
<code class="secret" id="smpp-password">${opts.shown.user.password}</code>
<button type="button" class="secondary" data-copy="smpp-password" aria-label="Copy the SMPP password">Copy</button></section>`
      : html``;
    const cards = users.map(
      (u) => html`<section class="card" aria-labelledby="smpp-${u.system_id}"><h2 id="smpp-${u.system_id}"><code>${u.system_id}</code></h2>
<p>${String(u.tps)} submits per second, at most ${String(u.max_binds)} binds, from ${u.allow.length > 0 ? html`${u.allow.map((a) => html`<code>${a}</code> `)}` : 'any address'}. Password set ${when(u.rotated_at)}. Receipts and messages waiting for a receiver bind: ${String(u.waiting)}.</p>
${table(
  `Live binds of ${u.system_id}`,
  ['Type', 'Address', 'Since', 'Submits'],
  u.binds.map((b) => [b.type, html`<code>${b.address}</code>`, when(b.since), String(b.submits)]),
  'Not bound now.',
)}
<div class="actions"><form method="post" action="/dashboard/settings/smpp/${u.system_id}/rotate" class="inline" data-confirm="Give ${u.system_id} a new password? The current one stops working and its binds end.">${csrfField(session.csrf_token)}<input type="hidden" name="nonce" value="${nonce}"><button type="submit" class="secondary" aria-label="New password for ${u.system_id}">New password</button></form>
<form method="post" action="/dashboard/settings/smpp/${u.system_id}/delete" class="inline" data-confirm="Delete ${u.system_id}? Its binds end, and receipts waiting for it are dropped.">${csrfField(session.csrf_token)}<button type="submit" class="danger" aria-label="Delete ${u.system_id}">Delete</button></form></div></section>`,
    );
    const f = opts.form ?? { systemId: '', tps: '', maxBinds: '', allow: '' };
    const create = html`<section><h2>New SMPP User</h2>
<form method="post" action="/dashboard/settings/smpp">${csrfField(session.csrf_token)}<input type="hidden" name="nonce" value="${nonce}">
<label for="system_id">system_id</label><input id="system_id" name="system_id" type="text" required maxlength="15" pattern="[A-Za-z0-9_-]{1,15}" value="${f.systemId}" aria-describedby="system-id-hint">
<p class="hint" id="system-id-hint">1 to 15 letters, digits, <code>_</code> or <code>-</code>, unique in this installation: what your SMPP client binds with.</p>
<label for="tps">Submits per second</label><input id="tps" name="tps" type="number" min="1" max="${String(MAX_TPS)}" placeholder="${String(DEFAULT_TPS)}" value="${f.tps}">
<label for="max_binds">Binds at once, at most</label><input id="max_binds" name="max_binds" type="number" min="1" max="${String(MAX_MAX_BINDS)}" placeholder="${String(DEFAULT_MAX_BINDS)}" value="${f.maxBinds}">
<label for="allow">Allowed addresses</label><input id="allow" name="allow" type="text" maxlength="1000" placeholder="203.0.113.0/24, 198.51.100.7" value="${f.allow}" aria-describedby="allow-hint">
<p class="hint" id="allow-hint">Addresses or CIDR ranges, separated by commas, from which it may bind; empty for any.</p>
<div class="actions"><button type="submit">Create SMPP User</button></div></form></section>`;
    return render(
      request,
      reply,
      'SMPP',
      'settings',
      html`${settingsTabs('smpp')}${alert(opts.error)}${shown}${where}${users.length === 0 ? html`<p>This account has no SMPP users yet.</p>` : html`${cards}`}${create}`,
    );
  };

  /**
   * True to go ahead; otherwise false, the page having been sent again with why nothing was done.
   * A boolean, not the reply: a FastifyReply is thenable, so an awaited one reads as undefined and
   * the form would go ahead after all.
   */
  const freshForm = async (request: FastifyRequest, reply: FastifyReply, what: string): Promise<boolean> => {
    const use = await useKeyFormNonce(ctx, state(request).session.id, field(request.body, 'nonce'));
    if (use === 'fresh') return true;
    reply.code(409).header('cache-control', 'no-store');
    await smppPage(request, reply, {
      error:
        use === 'used'
          ? `This form was already sent and its password was shown once; Pigeon keeps no copy, so it cannot be shown again, and nothing was ${what}. If you did not copy it, give the user a new password below.`
          : `This form is out of date (a newer one was opened); nothing was ${what}. Try again below.`,
    });
    return false;
  };

  const failed = (request: FastifyRequest, reply: FastifyReply, err: unknown, form?: PageOptions['form']) => {
    if (!(err instanceof AppError) || !['invalid_request', 'email_not_verified', 'system_id_taken', 'not_found'].includes(err.code)) throw err;
    reply.code(err.status);
    return smppPage(request, reply, { error: err.message, ...(form ? { form } : {}) });
  };

  app.get('/settings/smpp', async (request, reply) => smppPage(request, reply));

  app.post('/settings/smpp', async (request, reply) => {
    const form = { systemId: field(request.body, 'system_id').trim(), tps: field(request.body, 'tps'), maxBinds: field(request.body, 'max_binds'), allow: field(request.body, 'allow') };
    if (!(await freshForm(request, reply, 'created'))) return reply;
    try {
      assertOwnerVerified(state(request).owner);
      const tps = wholeField(form.tps, 'Submits per second');
      const maxBinds = wholeField(form.maxBinds, 'Binds at once');
      const user = await createSmppUser(acting(ctx, request), state(request).account.id, {
        systemId: form.systemId,
        ...(tps !== undefined ? { tps } : {}),
        ...(maxBinds !== undefined ? { maxBinds } : {}),
        allow: form.allow.split(',').map((a) => a.trim()).filter((a) => a !== ''),
      });
      reply.header('cache-control', 'no-store');
      return smppPage(request, reply, { shown: { user, rotated: false } });
    } catch (err) {
      return failed(request, reply, err, form);
    }
  });

  app.post<{ Params: { id: string } }>('/settings/smpp/:id/rotate', async (request, reply) => {
    if (!(await freshForm(request, reply, 'changed'))) return reply;
    try {
      assertOwnerVerified(state(request).owner);
      const user = await rotateSmppUser(acting(ctx, request), request.params.id, { accountId: state(request).account.id });
      reply.header('cache-control', 'no-store');
      return smppPage(request, reply, { shown: { user, rotated: true } });
    } catch (err) {
      return failed(request, reply, err);
    }
  });

  app.post<{ Params: { id: string } }>('/settings/smpp/:id/delete', async (request, reply) => {
    try {
      await deleteSmppUser(acting(ctx, request), request.params.id, { accountId: state(request).account.id });
    } catch (err) {
      return failed(request, reply, err);
    }
    return seeOther(reply, '/dashboard/settings/smpp');
  });
}
