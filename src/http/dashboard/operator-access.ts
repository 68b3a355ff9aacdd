/**
 * The operator console's one role table (DECISIONS.md §15): every page and form of /operator,
 * by method and route, with the permission it needs (src/domain/operator-roles.ts says which
 * roles hold each). `operatorAccessHook` checks it on every request after the session guard, so a
 * form forged by hand meets the same check as a button; a route missing from the table is refused
 * to everyone (and test/api/operator-roles.test.ts fails), so a new page cannot slip in unguarded.
 * A refusal is a 403 page and a record in the audit log.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../errors/catalogue.ts';
import { roleMay, type OperatorPermission } from '../../domain/operator-roles.ts';
import { recordAudit } from '../../services/audit/audit.ts';
import type { Context } from '../../services/context.ts';
import { acting } from '../acting.ts';

/** `public`: reachable without a session (the login form). */
export const OPERATOR_ROUTE_PERMISSIONS: Readonly<Record<string, OperatorPermission | 'public'>> = {
  'GET /operator/login': 'public',
  'POST /operator/login': 'public',
  'POST /operator/logout': 'console',
  // The code step after the password, and each operator's own two-factor set-up.
  'GET /operator/login/code': 'public',
  'POST /operator/login/code': 'public',
  'GET /operator/security': 'console',
  'POST /operator/security/start': 'console',
  'POST /operator/security/confirm': 'console',
  'POST /operator/security/recovery-codes': 'console',
  'GET /operator': 'console',
  'GET /operator/': 'console',
  'GET /operator/sender-ids': 'sender_ids.review',
  'POST /operator/sender-ids/:id/approve': 'sender_ids.review',
  'POST /operator/sender-ids/:id/reject': 'sender_ids.review',
  'POST /operator/sender-ids/:id/request-info': 'sender_ids.review',
  'GET /operator/documents/:id': 'sender_ids.review',
  'GET /operator/accounts': 'accounts.read',
  'POST /operator/accounts/:id/credits': 'credits.add',
  'POST /operator/accounts/:id/suspend': 'accounts.suspend',
  'POST /operator/accounts/:id/resume': 'accounts.suspend',
  'GET /operator/accounts/:id/limits': 'limits.manage',
  'POST /operator/accounts/:id/limits': 'limits.manage',
  'POST /operator/accounts/:id/retention': 'retention.manage',
  'GET /operator/erasures': 'erasures.manage',
  'GET /operator/backlog': 'accounts.read',
  'GET /operator/smpp': 'binds.read',
  'GET /operator/outbox': 'mail.read',
  'GET /operator/numbers': 'numbers.manage',
  'POST /operator/numbers': 'numbers.manage',
  'POST /operator/numbers/release': 'numbers.manage',
  'GET /operator/rate-cards': 'rate_cards.read',
  'POST /operator/rate-cards/preview': 'rate_cards.import',
  'POST /operator/rate-cards/apply': 'rate_cards.import',
  'GET /operator/rate-cards/:name/export': 'rate_cards.read',
  'GET /operator/rate-cards/:name': 'rate_cards.read',
  'GET /operator/routes': 'routes.manage',
  'POST /operator/routes': 'routes.manage',
  'GET /operator/routes/:name': 'routes.manage',
  'POST /operator/routes/:name': 'routes.manage',
  'POST /operator/routes/:name/remove': 'routes.manage',
  'GET /operator/verify': 'accounts.read',
  'POST /operator/verify/unblock': 'limits.manage',
  'GET /operator/margin': 'margin.read',
  'GET /operator/messages': 'messages.read',
  'GET /operator/audit': 'audit.read',
  'GET /operator/audit.csv': 'audit.read',
};

/** The table's key of a request: its method (HEAD as GET) and its route's pattern. */
export function routeKey(method: string, url: string): string {
  return `${method === 'HEAD' ? 'GET' : method} ${url}`;
}

/** The permission a route needs; undefined when the table does not name it. */
export function operatorRoutePermission(method: string, url: string): OperatorPermission | 'public' | undefined {
  return OPERATOR_ROUTE_PERMISSIONS[routeKey(method, url)];
}

/** Whether the signed-in operator of this request may do what the route needs. */
export function operatorMay(request: FastifyRequest, permission: OperatorPermission): boolean {
  const role = request.operator?.operator.role;
  return role !== undefined && roleMay(role, permission);
}

/** The preHandler after the session guard: the role's check, recorded when it refuses. */
export function operatorAccessHook(ctx: Context) {
  return async (request: FastifyRequest, _reply: FastifyReply) => {
    const url = request.routeOptions.url ?? '';
    const needed = operatorRoutePermission(request.method, url);
    if (needed === 'public') return;
    if (!request.operator) return; // the session guard has answered (a redirect to the login page)
    if (needed !== undefined && operatorMay(request, needed)) return;
    const { operator } = request.operator;
    await recordAudit(acting(ctx, request), {
      action: 'operator.access_denied',
      accountId: null,
      target: { type: 'route', id: routeKey(request.method, url) },
      changes: { role: [null, operator.role], needed: [null, needed ?? 'undeclared'] },
    });
    throw new AppError('operator_role_forbidden');
  };
}
