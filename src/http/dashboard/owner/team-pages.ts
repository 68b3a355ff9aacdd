/**
 * Settings → Team, /dashboard/settings/team: the account's members and waiting invitations; an
 * owner invites by e-mail with a role, changes roles, removes people and withdraws invitations.
 * /dashboard/invitation is where an invitation's link leads: the invited person chooses a password.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { MEMBER_ROLES, type MemberRole } from '../../../domain/member-roles.ts';
import { AppError } from '../../../errors/catalogue.ts';
import { acceptInvitation, changeMemberRole, invitationOfLink, inviteMember, listMembers, listPendingInvitations, removeMember, revokeInvitation } from '../../../services/accounts/members.ts';
import { createSession } from '../../../services/auth/sessions.ts';
import { resetMemberTwoFactor, setRequireTwoFactor } from '../../../services/auth/two-factor.ts';
import { acting } from '../../acting.ts';
import { html, raw, type Html } from '../../html.ts';
import { alert, csrfField, page, table, when } from '../layout.ts';
import { checkPreLoginToken, field, preLoginToken, seeOther, setSessionCookie } from '../session-guard.ts';
import { roleOf, settingsTabs, state, type OwnerArea } from './owner-area.ts';

const ROLE_HINTS: Record<MemberRole, string> = {
  owner: 'everything, the team included',
  developer: 'API keys, webhooks and events, Sender IDs, numbers, SMPP, Twilio credentials, sends and campaigns',
  billing: 'balance, ledger, usage and prices',
  viewer: 'reads only',
};

function roleSelect(name: string, id: string, selected: MemberRole, label: string): Html {
  return html`<select name="${name}" id="${id}" aria-label="${label}">${MEMBER_ROLES.map(
    (r) => html`<option value="${r}"${r === selected ? raw(' selected') : ''}>${r}</option>`,
  )}</select>`;
}

export function teamPages(app: FastifyInstance, { ctx, render }: OwnerArea): void {
  const teamPage = async (request: FastifyRequest, reply: FastifyReply, message?: { text: string; kind: 'ok' | 'error' }) => {
    const s = state(request);
    const csrf = csrfField(s.session.csrf_token);
    const isOwner = roleOf(s) === 'owner';
    const members = await listMembers(ctx, s.account.id);
    const invitations = await listPendingInvitations(ctx, s.account.id);
    const memberRows = members.map((m) => [
      html`${m.email}${m.id === s.owner.id ? html` <span class="muted">(you)</span>` : ''}`,
      isOwner
        ? html`<form method="post" action="/dashboard/settings/team/${m.id}/role" class="inline">${csrf}${roleSelect('role', `role-${m.id}`, m.role, `Role of ${m.email}`)} <button type="submit" class="secondary">Change</button></form>`
        : html`${m.role}`,
      m.two_factor
        ? isOwner && m.id !== s.owner.id
          ? html`on <form method="post" action="/dashboard/settings/team/${m.id}/reset-2fa" class="inline" data-confirm="Reset the two-factor sign-in of ${m.email}? Their sessions end.">${csrf}<button type="submit" class="secondary" aria-label="Reset two-factor of ${m.email}">Reset</button></form>`
          : 'on'
        : 'off',
      when(m.created_at),
      isOwner
        ? html`<form method="post" action="/dashboard/settings/team/${m.id}/remove" class="inline" data-confirm="Remove ${m.email} from the account? Their sessions end at once.">${csrf}<button type="submit" class="danger" aria-label="Remove ${m.email}">Remove</button></form>`
        : html``,
    ]);
    const invitationRows = invitations.map((i) => [
      i.email,
      i.role,
      when(i.expires_at),
      isOwner
        ? html`<form method="post" action="/dashboard/settings/team/invitations/${i.id}/revoke" class="inline">${csrf}<button type="submit" class="secondary" aria-label="Withdraw the invitation of ${i.email}">Withdraw</button></form>`
        : html``,
    ]);
    const inviteForm = isOwner
      ? html`<section><h2>Invite someone</h2><form method="post" action="/dashboard/settings/team/invite">${csrf}
<label for="invite-email">E-mail</label><input id="invite-email" name="email" type="email" required maxlength="254">
<label for="invite-role">Role</label>${roleSelect('role', 'invite-role', 'developer', 'Role')}
<ul class="hint">${MEMBER_ROLES.map((r) => html`<li><code>${r}</code>: ${ROLE_HINTS[r]}</li>`)}</ul>
<p class="hint">We mail them a link, valid 7 days and usable once, to choose a password.</p>
<div class="actions"><button type="submit">Send the invitation</button></div></form></section>`
      : html`<p class="hint">Your role is <strong>${roleOf(s)}</strong>; an owner of the account manages the team.</p>`;
    const required = Number(s.account.require_2fa ?? 0) === 1;
    const requireForm = isOwner
      ? html`<section><h2>Two-factor for everyone</h2><p id="require-2fa-state">${required ? 'Every member must sign in with two-factor; a member without it sets it up first.' : 'Two-factor sign-in is up to each member.'}</p>
<form method="post" action="/dashboard/settings/team/require-2fa">${csrf}<input type="hidden" name="required" value="${required ? 'off' : 'on'}"><button type="submit" class="secondary">${required ? 'Stop requiring two-factor' : 'Require two-factor of every member'}</button></form></section>`
      : html``;
    return render(
      request,
      reply,
      'Team',
      'settings',
      html`${settingsTabs('team')}${alert(message?.text, message?.kind)}
<section>${table('Members', ['E-mail', 'Role', 'Two-factor', 'Joined', ''], memberRows, 'No members.')}</section>
<section><h2>Invitations waiting</h2>${table('Invitations waiting', ['E-mail', 'Role', 'Expires', ''], invitationRows, 'No invitations waiting.')}</section>
${inviteForm}${requireForm}`,
    );
  };

  /** Runs a team change and shows the page again, with the refusal when there is one. */
  const act = async (request: FastifyRequest, reply: FastifyReply, change: () => Promise<void>, done: string) => {
    try {
      await change();
    } catch (err) {
      if (!(err instanceof AppError) || !['invalid_request', 'not_found', 'quota_exceeded'].includes(err.code)) throw err;
      reply.code(err.status);
      return teamPage(request, reply, { text: err.message, kind: 'error' });
    }
    return teamPage(request, reply, { text: done, kind: 'ok' });
  };

  app.get('/settings/team', async (request, reply) => teamPage(request, reply));

  app.post('/settings/team/invite', async (request, reply) => {
    const s = state(request);
    const email = field(request.body, 'email');
    return act(request, reply, async () => void (await inviteMember(acting(ctx, request), s.account.id, s.owner.id, { email, role: field(request.body, 'role') })), `An invitation was mailed to ${email.trim().toLowerCase()}.`);
  });

  app.post<{ Params: { id: string } }>('/settings/team/invitations/:id/revoke', async (request, reply) =>
    act(request, reply, () => revokeInvitation(acting(ctx, request), state(request).account.id, request.params.id), 'The invitation was withdrawn.'),
  );

  app.post<{ Params: { id: string } }>('/settings/team/:id/role', async (request, reply) =>
    act(request, reply, () => changeMemberRole(acting(ctx, request), state(request).account.id, request.params.id, field(request.body, 'role')), 'The role was changed.'),
  );

  app.post<{ Params: { id: string } }>('/settings/team/:id/remove', async (request, reply) => {
    const s = state(request);
    if (request.params.id === s.owner.id) {
      // Removing oneself ends this very session: there is no page to show after it.
      try {
        await removeMember(acting(ctx, request), s.account.id, s.owner.id);
      } catch (err) {
        if (!(err instanceof AppError) || err.code !== 'invalid_request') throw err;
        reply.code(err.status);
        return teamPage(request, reply, { text: err.message, kind: 'error' });
      }
      return seeOther(reply, '/dashboard/login');
    }
    return act(request, reply, () => removeMember(acting(ctx, request), s.account.id, request.params.id), 'The member was removed; their sessions have ended.');
  });

  app.post<{ Params: { id: string } }>('/settings/team/:id/reset-2fa', async (request, reply) =>
    act(request, reply, () => resetMemberTwoFactor(acting(ctx, request), state(request).account.id, request.params.id), 'Their two-factor sign-in was reset and their sessions ended.'),
  );

  app.post('/settings/team/require-2fa', async (request, reply) => {
    const s = state(request);
    const on = field(request.body, 'required') === 'on';
    await setRequireTwoFactor(acting(ctx, request), s.account.id, on);
    s.account = { ...s.account, require_2fa: on ? 1 : 0 };
    // The owner too, without two-factor, goes to set it up first.
    if (on && s.owner.totp_enabled_at == null) return seeOther(reply, '/dashboard/settings/security');
    return teamPage(request, reply, { text: on ? 'Two-factor is now required of every member.' : 'Two-factor is no longer required.', kind: 'ok' });
  });

  // The invitation's link.

  const invitationPage = (csrf: string, token: string, info: { email: string; accountName: string; role: string }, error?: string) =>
    page({
      title: 'Join the team',
      area: 'owner',
      body: html`<section class="narrow">${alert(error)}<p id="invitation">You are invited to join <strong>${info.accountName}</strong> as <strong>${info.role}</strong>, signing in as ${info.email}.</p>
<form method="post" action="/dashboard/invitation">${csrfField(csrf)}<input type="hidden" name="token" value="${token}">
<label for="password">Choose a password</label><input id="password" name="password" type="password" autocomplete="new-password" required minlength="12" aria-describedby="password-hint">
<p class="hint" id="password-hint">At least 12 characters.</p>
<div class="actions"><button type="submit">Join</button></div></form></section>`,
    });

  const deadInvitationPage = () =>
    page({
      title: 'Invitation expired',
      area: 'owner',
      body: html`<section class="narrow"><p class="alert error" role="alert" id="invitation-dead">This invitation has expired, has already been used or was withdrawn; ask the account owner for a new one.</p>
<p><a href="/dashboard/login">Log in</a></p></section>`,
    });

  app.get<{ Querystring: { token?: string } }>('/invitation', async (request, reply) => {
    const token = typeof request.query.token === 'string' ? request.query.token : '';
    reply.header('referrer-policy', 'no-referrer');
    const found = await invitationOfLink(ctx, token);
    if (!found) return reply.code(400).type('text/html; charset=utf-8').send(deadInvitationPage());
    const info = { email: found.invitation.email, accountName: found.accountName, role: found.invitation.role };
    return reply.type('text/html; charset=utf-8').send(invitationPage(preLoginToken(ctx, request, reply), token, info));
  });

  app.post('/invitation', async (request, reply) => {
    checkPreLoginToken(request, field(request.body, '_csrf'));
    const token = field(request.body, 'token');
    try {
      const member = await acceptInvitation(acting(ctx, request), token, field(request.body, 'password'));
      const { token: cookie } = await createSession(ctx, 'owner', member.id);
      setSessionCookie(ctx, reply, 'owner', cookie);
      return seeOther(reply, '/dashboard');
    } catch (err) {
      if (!(err instanceof AppError) || !['invalid_request', 'service_unavailable'].includes(err.code)) throw err;
      if (err.headers) reply.headers(err.headers);
      const found = await invitationOfLink(ctx, token);
      if (!found) return reply.code(400).type('text/html; charset=utf-8').send(deadInvitationPage());
      const info = { email: found.invitation.email, accountName: found.accountName, role: found.invitation.role };
      return reply.code(err.status).type('text/html; charset=utf-8').send(invitationPage(preLoginToken(ctx, request, reply), token, info, err.message));
    }
  });
}
