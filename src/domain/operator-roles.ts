/**
 * What each operator role may do (DECISIONS.md §15): `support` reviews Sender IDs and their
 * documents, reads accounts, messages and binds, suspends and restores accounts; `finance` adds
 * credits, imports rate cards, reads margin and usage; `admin` does everything, routes, operators
 * and erasures included. The console's pages and forms each declare the one permission they need
 * (src/http/dashboard/operator-access.ts); this table says which roles hold it.
 */

export const OPERATOR_ROLES = ['admin', 'support', 'finance'] as const;
export type OperatorRole = (typeof OPERATOR_ROLES)[number];

export const OPERATOR_PERMISSIONS = [
  /** Pages every signed-in operator sees (the home redirect, logging out, their own audit trail is not one). */
  'console',
  'sender_ids.review',
  'accounts.read',
  'accounts.suspend',
  'messages.read',
  'binds.read',
  'credits.add',
  'rate_cards.read',
  'rate_cards.import',
  'margin.read',
  'usage.read',
  'routes.manage',
  'numbers.manage',
  'limits.manage',
  'retention.manage',
  'erasures.manage',
  'mail.read',
  'audit.read',
  'operators.manage',
] as const;
export type OperatorPermission = (typeof OPERATOR_PERMISSIONS)[number];

const ROLE_PERMISSIONS: Record<Exclude<OperatorRole, 'admin'>, ReadonlySet<OperatorPermission>> = {
  support: new Set(['console', 'sender_ids.review', 'accounts.read', 'accounts.suspend', 'messages.read', 'binds.read']),
  finance: new Set(['console', 'accounts.read', 'credits.add', 'rate_cards.read', 'rate_cards.import', 'margin.read', 'usage.read']),
};

export function isOperatorRole(value: unknown): value is OperatorRole {
  return typeof value === 'string' && (OPERATOR_ROLES as readonly string[]).includes(value);
}

/** Whether an operator of `role` may do what `permission` names; an unknown role may do nothing. */
export function roleMay(role: string, permission: OperatorPermission): boolean {
  if (role === 'admin') return true;
  const granted = ROLE_PERMISSIONS[role as Exclude<OperatorRole, 'admin'>];
  return granted ? granted.has(permission) : false;
}
