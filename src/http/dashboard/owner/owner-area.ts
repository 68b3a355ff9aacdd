/**
 * The account owner's area, under /dashboard: what every page group shares (the session guard,
 * the request's owner and account, the page frame) and the plugin that registers the groups.
 * Each page group is a module beside this one (auth, overview, keys, settings, sender IDs,
 * messages, campaigns, credits, two-way), given the app and the area; src/http/dashboard/dashboard-routes.ts lists
 * them. Every page calls services; none touches the store.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { accountMayUseApi } from '../../../services/auth/access.ts';
import type { Context } from '../../../services/context.ts';
import { getOwnerWithAccount, type OwnerWithAccount } from '../../../services/auth/owners.ts';
import type { Session } from '../../../services/auth/sessions.ts';
import { html, raw, type Html } from '../../html.ts';
import { alert, csrfField, page } from '../layout.ts';
import { sessionGuard } from '../session-guard.ts';

export interface OwnerRequestState extends OwnerWithAccount {
  session: Session;
}

declare module 'fastify' {
  interface FastifyRequest {
    owner?: OwnerRequestState;
  }
}

/** What a page group of the owner's area is given. */
export interface OwnerArea {
  ctx: Context;
  /** Sends a page of the owner's area: the frame, the suspension and verification notices, the body. */
  render(request: FastifyRequest, reply: FastifyReply, title: string, current: string, body: Html, scripts?: string[]): FastifyReply;
}

/** A page group: registers its routes (relative to /dashboard) on the owner's area. */
export type OwnerPageGroup = (app: FastifyInstance, area: OwnerArea) => void;

/** The signed-in owner and account of a request (the session guard put them there). */
export function state(request: FastifyRequest): OwnerRequestState {
  if (!request.owner) throw new Error('owner page reached without a session');
  return request.owner;
}

export const PAGE_SIZE = 25;

export function pageNumber(raw: unknown): number {
  const n = typeof raw === 'string' && /^\d{1,6}$/.test(raw) ? Number(raw) : 1;
  return Math.max(1, n);
}

/** The owner's area with its page groups, behind the one session guard. */
export function ownerPages(ctx: Context, groups: readonly OwnerPageGroup[]) {
  return async (app: FastifyInstance) => {
    app.decorateRequest('owner', undefined);

    app.addHook(
      'preHandler',
      sessionGuard(ctx, 'owner', (id) => getOwnerWithAccount(ctx, id), (request, session, found) => {
        request.owner = { session, ...found };
      }),
    );

    const render: OwnerArea['render'] = (request, reply, title, current, body, scripts) => {
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

    for (const group of groups) group(app, { ctx, render });
  };
}

/** The tabs of the Settings pages. */
export function settingsTabs(current: 'api-keys' | 'webhook' | 'events' | 'smpp' | 'twilio' | 'privacy' | 'password' | 'audit'): Html {
  const tabs = [
    { key: 'api-keys', href: '/dashboard/settings/api-keys', label: 'API Keys' },
    { key: 'webhook', href: '/dashboard/settings/webhook', label: 'Webhook secret' },
    { key: 'events', href: '/dashboard/settings/events', label: 'Numbers and events' },
    { key: 'smpp', href: '/dashboard/settings/smpp', label: 'SMPP' },
    { key: 'twilio', href: '/dashboard/settings/twilio', label: 'Twilio-compatible API' },
    { key: 'privacy', href: '/dashboard/settings/privacy', label: 'Data retention' },
    { key: 'password', href: '/dashboard/settings/password', label: 'Password' },
    { key: 'audit', href: '/dashboard/settings/audit', label: 'Audit log' },
  ];
  return html`<nav aria-label="Settings" class="tabs"><ul>${tabs.map(
    (t) => html`<li><a href="${t.href}"${t.key === current ? raw(' aria-current="page"') : ''}>${t.label}</a></li>`,
  )}</ul></nav>`;
}
