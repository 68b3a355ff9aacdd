/**
 * Settings → Audit log, under /dashboard/settings/audit: the account's record of changes (who,
 * what, from where, before and after), filtered by action and time, and its CSV download.
 */
import type { FastifyInstance } from 'fastify';
import { html } from '../../html.ts';
import { auditSection, sendAuditCsv, type AuditFilterInput } from '../audit-view.ts';
import { settingsTabs, state, type OwnerArea } from './owner-area.ts';

export function auditPages(app: FastifyInstance, { ctx, render }: OwnerArea): void {
  app.get<{ Querystring: AuditFilterInput }>('/settings/audit', async (request, reply) => {
    const body = await auditSection(ctx, '/dashboard/settings/audit', request.query, state(request).account.id);
    return render(request, reply, 'Audit log', 'settings', html`${settingsTabs('audit')}${body}`);
  });
  app.get<{ Querystring: AuditFilterInput }>('/settings/audit.csv', async (request, reply) => sendAuditCsv(ctx, reply, request.query, state(request).account.id));
}
