/**
 * Settings → SMPP, /dashboard/settings/smpp: the account's SMPP users (DECISIONS.md §10) with
 * their live binds (in every process) and what waits for a receiver bind, and where to bind. The
 * operator makes, rotates and deletes them (`pigeon smpp-user`): a password is handed over once.
 */
import type { FastifyInstance } from 'fastify';
import { listSmppUsers } from '../../../services/smpp-access/smpp-users.ts';
import { html } from '../../html.ts';
import { table, when } from '../layout.ts';
import { settingsTabs, state, type OwnerArea } from './owner-area.ts';


export function smppPages(app: FastifyInstance, { ctx, render }: OwnerArea): void {
  app.get('/settings/smpp', async (request, reply) => {
    const { account } = state(request);
    const users = await listSmppUsers(ctx, { accountId: account.id });
    const host = new URL(ctx.config.publicUrl).hostname;
    const port = ctx.config.smppServer.port;
    const where =
      port === 0
        ? html`<p>This installation does not accept SMPP binds (its operator has turned the listener off).</p>`
        : html`<p>Bind with SMPP 3.4 to <code>${host}:${String(port)}</code>${ctx.config.smppServer.tls ? html` (TLS: <code>${host}:${String(ctx.config.smppServer.tls.port)}</code>)` : html``} with a <code>system_id</code> below and the password your operator gave you. Sends over SMPP are charged and checked like API sends; receipts and messages to your numbers come back to your receiver and transceiver binds.</p>`;
    const cards = users.map(
      (u) => html`<section class="card" aria-labelledby="smpp-${u.system_id}"><h2 id="smpp-${u.system_id}"><code>${u.system_id}</code></h2>
<p>${String(u.tps)} submits per second, at most ${String(u.max_binds)} binds, from ${u.allow.length > 0 ? html`${u.allow.map((a) => html`<code>${a}</code> `)}` : 'any address'}. Password set ${when(u.rotated_at)}. Receipts and messages waiting for a receiver bind: ${String(u.waiting)}.</p>
${table(
  `Live binds of ${u.system_id}`,
  ['Type', 'Address', 'Since', 'Submits'],
  u.binds.map((b) => [b.type, html`<code>${b.address}</code>`, when(b.since), String(b.submits)]),
  'Not bound now.',
)}</section>`,
    );
    return render(
      request,
      reply,
      'SMPP',
      'settings',
      html`${settingsTabs('smpp')}${where}${users.length === 0 ? html`<p>This account has no SMPP users yet: your operator creates them (<code>pigeon smpp-user create</code>).</p>` : html`${cards}`}`,
    );
  });
}
