/**
 * What each member role of an account may do in the dashboard, and the one table that says what
 * every dashboard route requires. The owner's area checks the table in a hook before any handler
 * runs, so a page or form cannot forget its check, and a test walks every registered route and
 * fails when one is missing here.
 *
 * - `owner`: everything, the team and account-wide settings included.
 * - `developer`: API keys, the webhook secret, events URL, Sender IDs, numbers, SMPP users,
 *   Twilio credentials, sends, campaigns, redaction of its messages, and every read.
 * - `billing`: balance, ledger, usage and prices (all reads in the dashboard), and every read.
 * - `viewer`: reads only.
 * Everyone may manage their own sign-in (password, two-factor) and log out.
 */
export const MEMBER_ROLES = ['owner', 'developer', 'billing', 'viewer'] as const;
export type MemberRole = (typeof MEMBER_ROLES)[number];

export function isMemberRole(value: unknown): value is MemberRole {
  return typeof value === 'string' && (MEMBER_ROLES as readonly string[]).includes(value);
}

/**
 * What a route needs:
 * - `public`: no session (sign-up, login, e-mailed links);
 * - `code`: a session waiting for its two-factor code (the code form);
 * - `self`: any member, acting on their own sign-in only (password, two-factor, logout); reachable
 *   before a member required to use two-factor has set it up;
 * - `read`: any member, reading;
 * - `developer`, `billing`, `owner`: changes in that role's remit (an owner meets every one).
 */
export type Requirement = 'public' | 'code' | 'self' | 'read' | 'developer' | 'billing' | 'owner';

export function roleMeets(role: MemberRole, requirement: Requirement): boolean {
  switch (requirement) {
    case 'public':
    case 'code':
    case 'self':
    case 'read':
      return true;
    case 'developer':
      return role === 'owner' || role === 'developer';
    case 'billing':
      return role === 'owner' || role === 'billing';
    case 'owner':
      return role === 'owner';
  }
}

/** Every route of the owner's area, `METHOD path` (relative to /dashboard) to its requirement. */
export const DASHBOARD_REQUIREMENTS: Readonly<Record<string, Requirement>> = {
  // Sign-up, login and e-mailed links.
  'GET /login': 'public',
  'POST /login': 'public',
  'GET /login/code': 'code',
  'POST /login/code': 'code',
  'POST /login/code/cancel': 'code',
  'GET /signup': 'public',
  'POST /signup': 'public',
  'GET /forgot-password': 'public',
  'POST /forgot-password': 'public',
  'GET /reset-password': 'public',
  'POST /reset-password': 'public',
  'GET /verify': 'public',
  'GET /invitation': 'public',
  'POST /invitation': 'public',
  'POST /verify/resend': 'self',
  'POST /logout': 'self',
  // Reads.
  'GET /': 'read',
  'GET /settings': 'read',
  'GET /settings/api-keys': 'read',
  'GET /settings/webhook': 'read',
  'GET /settings/events': 'read',
  'GET /settings/smpp': 'read',
  'GET /settings/twilio': 'read',
  'GET /settings/privacy': 'read',
  'GET /settings/quiet-hours': 'read',
  'GET /sender-ids': 'read',
  'GET /sender-ids/check': 'read',
  'GET /sender-ids/documents/:id': 'read',
  'GET /messages': 'read',
  'GET /messages/:id': 'read',
  'GET /campaigns': 'read',
  'GET /campaigns/new': 'read',
  'GET /campaigns/:id': 'read',
  'GET /campaigns/:id/progress': 'read',
  'GET /campaigns/:id/results.csv': 'read',
  'GET /inbox': 'read',
  'GET /inbox/:phone': 'read',
  'GET /opt-outs': 'read',
  'GET /credits': 'read',
  'GET /usage': 'read',
  'GET /usage.csv': 'read',
  'GET /verifications': 'read',
  'GET /settings/team': 'read',
  // Who changed what, from where: the owners' to read, as they answer for the account.
  'GET /settings/audit': 'owner',
  'GET /settings/audit.csv': 'owner',
  // The person's own sign-in.
  'GET /settings/password': 'self',
  'POST /settings/password': 'self',
  'GET /settings/security': 'self',
  'POST /settings/security/start': 'self',
  'POST /settings/security/confirm': 'self',
  'POST /settings/security/disable': 'self',
  'POST /settings/security/recovery-codes': 'self',
  // Developers' remit (the webhook secret is a credential: revealing it is not a read).
  'POST /settings/api-keys': 'developer',
  'POST /settings/api-keys/:id/revoke': 'developer',
  'POST /settings/webhook/reveal': 'developer',
  'POST /settings/webhook/rotate': 'developer',
  'POST /settings/events': 'developer',
  'POST /settings/events/help': 'developer',
  'POST /settings/events/clear': 'developer',
  'POST /settings/quiet-hours': 'developer',
  'POST /settings/smpp': 'developer',
  'POST /settings/smpp/:id/rotate': 'developer',
  'POST /settings/smpp/:id/delete': 'developer',
  'POST /settings/twilio/rotate': 'developer',
  'POST /settings/twilio/sms-url': 'developer',
  'POST /sender-ids': 'developer',
  'POST /messages/:id/redact': 'developer',
  'POST /campaigns': 'developer',
  'POST /campaigns/preview': 'developer',
  'POST /campaigns/time-zone': 'developer',
  'POST /campaigns/:id/cancel': 'developer',
  'POST /inbox/:phone/:id/redact': 'developer',
  'POST /opt-outs': 'developer',
  'POST /opt-outs/remove': 'developer',
  'POST /verifications/unblock': 'developer',
  // Owners only: the team and account-wide rules.
  'POST /settings/team/invite': 'owner',
  'POST /settings/team/invitations/:id/revoke': 'owner',
  'POST /settings/team/:id/role': 'owner',
  'POST /settings/team/:id/remove': 'owner',
  'POST /settings/team/:id/reset-2fa': 'owner',
  'POST /settings/team/require-2fa': 'owner',
};

/** The requirement of a route, or undefined when the table does not name it. */
export function requirementOf(method: string, path: string): Requirement | undefined {
  const m = method === 'HEAD' ? 'GET' : method;
  return DASHBOARD_REQUIREMENTS[`${m} ${path}`];
}

/** The table's routes as patterns of concrete paths (`:id` is one path segment). */
const ROUTE_PATTERNS = Object.entries(DASHBOARD_REQUIREMENTS).map(([route, requirement]) => {
  const [method, path] = route.split(' ') as [string, string];
  const pattern = path.split('/').map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/');
  return { method, pattern: new RegExp(`^${pattern}$`), requirement };
});

/**
 * The requirement of a request to a concrete path under /dashboard (`/settings/api-keys/key_1/revoke`):
 * what a page asks of the role before it shows a form that posts there.
 */
export function requirementOfPath(method: string, path: string): Requirement | undefined {
  const exact = requirementOf(method, path);
  if (exact !== undefined) return exact;
  return ROUTE_PATTERNS.find((r) => r.method === method && r.pattern.test(path))?.requirement;
}
