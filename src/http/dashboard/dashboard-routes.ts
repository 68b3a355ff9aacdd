/**
 * The web dashboard, served by the API's process: the owner's area under /dashboard and the
 * operator's under /operator, server-rendered HTML. Form and multipart parsing, cookies and the
 * HTML error pages live only inside this plugin's encapsulated scope, so `/v1` keeps accepting
 * JSON alone.
 */
import fastifyCookie from '@fastify/cookie';
import fastifyFormbody from '@fastify/formbody';
import fastifyMultipart from '@fastify/multipart';
import type { FastifyError, FastifyInstance } from 'fastify';
import { AppError } from '../../errors/catalogue.ts';
import type { Context } from '../../services/context.ts';
import { unavailableError } from '../../services/availability.ts';
import { MAX_DOCUMENT_BYTES, MAX_DOCUMENTS_PER_UPLOAD } from '../../services/sender-ids/documents.ts';
import { installReviewMail } from '../../services/mail/mail.ts';
import { html } from '../html.ts';
import { assetRoutes } from './assets.ts';
import { page } from './layout.ts';
import { operatorPages } from './operator-pages.ts';
import { authPages } from './owner/auth-pages.ts';
import { twoWayPageGroup } from './owner/two-way.ts';
import { campaignPages } from './owner/campaigns.ts';
import { creditPages } from './owner/credits-pages.ts';
import { keysPages } from './owner/keys-pages.ts';
import { smppPages } from './owner/smpp-pages.ts';
import { twilioPages } from './owner/twilio-pages.ts';
import { verifyPages } from './owner/verify-pages.ts';
import { messagePages } from './owner/messages-pages.ts';
import { ownerPages, type OwnerPageGroup } from './owner/owner-area.ts';
import { overviewPages } from './owner/overview-pages.ts';
import { senderIdPages } from './owner/sender-ids-pages.ts';
import { settingsPages } from './owner/settings-pages.ts';
import { usagePages } from './owner/usage-pages.ts';
import { auditPages } from './owner/audit-pages.ts';
import { teamPages } from './owner/team-pages.ts';
import { securityPages } from './owner/security-pages.ts';

const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
  'x-content-type-options': 'nosniff',
};

/** The page groups of the owner's area, each a module of ./owner/ (a new group is one more entry). */
const OWNER_PAGE_GROUPS: readonly OwnerPageGroup[] = [authPages, overviewPages, keysPages, smppPages, twilioPages, settingsPages, senderIdPages, messagePages, campaignPages, creditPages, usagePages, twoWayPageGroup, verifyPages, auditPages, teamPages, securityPages];

export function dashboardRoutes(ctx: Context) {
  return async (app: FastifyInstance) => {
    installReviewMail();
    await app.register(fastifyCookie);
    await app.register(fastifyFormbody, { bodyLimit: 64 * 1024 });
    await app.register(fastifyMultipart, {
      limits: { fileSize: MAX_DOCUMENT_BYTES, files: MAX_DOCUMENTS_PER_UPLOAD, fields: 10, fieldSize: 4096, parts: MAX_DOCUMENTS_PER_UPLOAD + 10 },
    });

    // Pages are not part of the API's OpenAPI description.
    app.addHook('onRoute', (route) => {
      route.schema = { ...(route.schema ?? {}), hide: true } as typeof route.schema;
    });
    app.addHook('onSend', async (request, reply, payload) => {
      // A document download sets its own, stricter policy (a sandbox): it stays.
      const ownPolicy = reply.getHeader('content-security-policy');
      reply.headers(SECURITY_HEADERS);
      if (ownPolicy !== undefined) reply.header('content-security-policy', ownPolicy);
      if (!request.url.startsWith('/dashboard/assets/')) reply.header('cache-control', 'no-store');
      return payload;
    });

    app.setErrorHandler((raw: FastifyError | AppError, request, reply) => {
      const error = unavailableError(ctx.store, raw) ?? raw;
      const area = request.url.startsWith('/operator') ? 'operator' : 'owner';
      let status = 500;
      let message = 'Something went wrong on our side; it has been logged.';
      if (error instanceof AppError) {
        status = error.status;
        message = error.message;
        if (error.headers) reply.headers(error.headers);
      } else if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
        status = error.statusCode;
        message = status === 413 ? 'The upload is too large.' : 'The request could not be read.';
      } else {
        request.log.error({ err: error }, 'dashboard error');
      }
      const back = area === 'operator' ? '/operator' : '/dashboard';
      return reply
        .code(status)
        .type('text/html; charset=utf-8')
        .send(page({ title: status === 404 ? 'Not found' : 'Error', area, body: html`<p class="alert error" role="alert">${message}</p><p><a href="${back}">Back to the dashboard</a></p>` }));
    });

    assetRoutes(app);
    await app.register(ownerPages(ctx, OWNER_PAGE_GROUPS), { prefix: '/dashboard' });
    await app.register(operatorPages(ctx), { prefix: '/operator' });
  };
}
