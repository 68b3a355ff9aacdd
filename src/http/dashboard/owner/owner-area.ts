/**
 * The account owner's area, under /dashboard: what every page group shares (the session guard,
 * the request's owner and account, the page frame) and the plugin that registers the groups.
 * Each page group is a module beside this one (auth, overview, keys, settings, sender IDs,
 * messages, campaigns, credits, two-way), given the app and the area; src/http/dashboard/dashboard-routes.ts lists
 * them. Every page calls services; none touches the store.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { requirementOf, requirementOfPath, roleMeets, type MemberRole, type Requirement } from '../../../domain/member-roles.ts';
import { AppError } from '../../../errors/catalogue.ts';
import { recordRefusal } from '../../../services/audit/audit.ts';
import { accountMayUseApi } from '../../../services/auth/access.ts';
import type { Context } from '../../../services/context.ts';
import { getOwnerWithAccount, type OwnerWithAccount } from '../../../services/auth/owners.ts';
import type { Session } from '../../../services/auth/sessions.ts';
import { acting } from '../../acting.ts';
import { html, raw, type Html } from '../../html.ts';
import { alert, csrfField, page } from '../layout.ts';
import { seeOther, sessionGuard } from '../session-guard.ts';

export const SECURITY_PAGE = '/dashboard/settings/security';

export interface OwnerRequestState extends OwnerWithAccount {
  session: Session;
}

declare module 'fastify' {
  interface FastifyRequest {
    owner?: OwnerRequestState;
  }
  interface FastifyContextConfig {
    /** What an owner-area route requires, from DASHBOARD_REQUIREMENTS (set when it is registered). */
    requirement?: Requirement;
  }
}

/** A member's role (rows made before roles existed are owners). */
export function roleOf(s: OwnerWithAccount): MemberRole {
  return s.owner.role ?? 'owner';
}

/**
 * Refuses a request the member's role does not allow (a 403 page). One function, so that every
 * refusal, a forged POST included, is handled and recorded in the audit log in one place (at most
 * MAX_REFUSALS_RECORDED_PER_HOUR an hour per account).
 */
export async function refuseForRole(ctx: Context, request: FastifyRequest, s: OwnerWithAccount, requirement: Requirement): Promise<never> {
  const route = `${request.method === 'HEAD' ? 'GET' : request.method} ${request.routeOptions.url ?? request.url}`;
  request.log.warn({ member: s.owner.id, role: roleOf(s), requirement, route }, 'dashboard request refused for the member role');
  await recordRefusal(acting(ctx, request), {
    action: 'member.access_denied',
    accountId: s.account.id,
    target: { type: 'route', id: route },
    changes: { role: [null, roleOf(s)], needed: [null, requirement] },
  });
  throw new AppError('insufficient_permissions', `Your role (${roleOf(s)}) does not allow this; ask an owner of the account.`);
}

/**
 * The page without the forms the member's role may not send: a viewer reads the API keys page
 * without a "Generate New Key" button that could only be refused. The server still checks every
 * POST (the preHandler below); this only spares people buttons that cannot work. Forms never nest,
 * so a form ends at the first `</form>` after it starts.
 */
export function withoutForbiddenForms(body: Html, role: MemberRole): Html {
  if (role === 'owner') return body;
  let hidden = 0;
  const text = body.text.replace(/<form\b[^>]*\bmethod="post"[^>]*>[\s\S]*?<\/form>/g, (form) => {
    const action = /\baction="\/dashboard([^"?#]*)/.exec(form)?.[1];
    if (action === undefined) return form;
    const requirement = requirementOfPath('POST', action === '' ? '/' : action);
    if (requirement !== undefined && roleMeets(role, requirement)) return form;
    hidden++;
    return '';
  });
  if (hidden === 0) return body;
  const hint = html`<p class="hint" id="role-hint">Your role is <strong>${role}</strong>: this page shows only what it may change; an owner of the account can do the rest.</p>`.text;
  // Below the page's tabs when it has them.
  const tabs = text.indexOf('</nav>');
  return raw(tabs === -1 ? hint + text : text.slice(0, tabs + 6) + hint + text.slice(tabs + 6));
}

/** The path under /dashboard that the role table uses for a route registered in the owner's area. */
function areaPath(url: string, prefix: string): string {
  const path = url.startsWith(prefix) ? url.slice(prefix.length) : url;
  return path === '' ? '/' : path;
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

    // Every route declares its requirement in the one table: a route missing from it stops the
    // server at start rather than serving a page nobody decided the roles of.
    app.addHook('onRoute', (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      const path = areaPath(route.url, route.prefix);
      const requirements = new Set(methods.map((m) => requirementOf(m, path)));
      const [requirement] = [...requirements];
      if (requirements.size !== 1 || requirement === undefined) throw new Error(`dashboard route ${methods.join(',')} ${path} has no requirement in DASHBOARD_REQUIREMENTS`);
      if (route.config?.public === true && requirement !== 'public') throw new Error(`dashboard route ${path} is public but its requirement is ${requirement}`);
      route.config = { ...route.config, public: requirement === 'public', codeStep: requirement === 'code', requirement };
    });

    app.addHook(
      'preHandler',
      sessionGuard(ctx, 'owner', (id) => getOwnerWithAccount(ctx, id), (request, session, found) => {
        request.owner = { session, ...found };
      }),
    );

    // After the session guard: the member's role must meet the route's requirement.
    app.addHook('preHandler', async (request, reply) => {
      const requirement = request.routeOptions.config.requirement;
      if (requirement === 'public' || requirement === 'code') return;
      const s = state(request);
      if (requirement === undefined || !roleMeets(roleOf(s), requirement)) await refuseForRole(ctx, request, s, requirement ?? 'owner');
      // An account that requires two-factor: a member without it sets it up before anything else.
      if (Number(s.account.require_2fa ?? 0) === 1 && s.owner.totp_enabled_at == null && requirement !== 'self') {
        if (request.headers['hx-request']) return reply.header('hx-redirect', SECURITY_PAGE).code(401).send('');
        return seeOther(reply, SECURITY_PAGE);
      }
    });

    const render: OwnerArea['render'] = (request, reply, title, current, body, scripts) => {
      const s = state(request);
      const suspended = !accountMayUseApi(s.account.status) ? alert('This account is suspended: the API refuses its keys. Contact the operator.') : html``;
      const unverified =
        s.owner.email_verified_at == null
          ? html`<div class="alert error" role="alert" id="unverified">Confirm your e-mail address: follow the link we sent to ${s.owner.email}. Until then you cannot create API keys or register Sender IDs.
<form method="post" action="/dashboard/verify/resend" class="inline">${csrfField(s.session.csrf_token)}<button type="submit" class="secondary">Send the link again</button></form></div>`
          : html``;
      return reply.type('text/html; charset=utf-8').send(
        page({ title, area: 'owner', current, session: { csrf: s.session.csrf_token, who: s.owner.email }, body: html`${suspended}${unverified}${withoutForbiddenForms(body, roleOf(s))}`, scripts }),
      );
    };

    for (const group of groups) group(app, { ctx, render });
  };
}

/** The tabs of the Settings pages. */
export function settingsTabs(current: 'api-keys' | 'webhook' | 'events' | 'quiet-hours' | 'smpp' | 'twilio' | 'privacy' | 'password' | 'audit' | 'team' | 'security'): Html {
  const tabs = [
    { key: 'api-keys', href: '/dashboard/settings/api-keys', label: 'API Keys' },
    { key: 'webhook', href: '/dashboard/settings/webhook', label: 'Webhook secret' },
    { key: 'events', href: '/dashboard/settings/events', label: 'Numbers and events' },
    { key: 'quiet-hours', href: '/dashboard/settings/quiet-hours', label: 'Quiet hours' },
    { key: 'smpp', href: '/dashboard/settings/smpp', label: 'SMPP' },
    { key: 'twilio', href: '/dashboard/settings/twilio', label: 'Twilio-compatible API' },
    { key: 'privacy', href: '/dashboard/settings/privacy', label: 'Data retention' },
    { key: 'password', href: '/dashboard/settings/password', label: 'Password' },
    { key: 'audit', href: '/dashboard/settings/audit', label: 'Audit log' },
    { key: 'security', href: '/dashboard/settings/security', label: 'Security' },
    { key: 'team', href: '/dashboard/settings/team', label: 'Team' },
  ];
  return html`<nav aria-label="Settings" class="tabs"><ul>${tabs.map(
    (t) => html`<li><a href="${t.href}"${t.key === current ? raw(' aria-current="page"') : ''}>${t.label}</a></li>`,
  )}</ul></nav>`;
}
