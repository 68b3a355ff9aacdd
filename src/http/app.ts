/**
 * buildApp: the Fastify instance with every route, used by `pigeon serve` and injected into by
 * the API tests (no open port needed).
 */
import { verifyRoutes } from './routes/verify.ts';
import Fastify, { LogController, type FastifyInstance, type FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Ajv } from 'ajv';
import type { Logger } from 'pino';
import { isUtf8 } from 'node:buffer';
import { readFileSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { AppError, catalogue, type ErrorCode } from '../errors/catalogue.ts';
import type { Carrier } from '../carriers/carrier.ts';
import type { Context } from '../services/context.ts';
import { unavailableError } from '../services/availability.ts';
import { httpDuration, httpRequests } from '../metrics.ts';
import { authFailureCounter, installAuth } from './auth.ts';
import { installBodyBudget } from './body-budget.ts';
import { installLingeringClose } from './lingering-close.ts';
import { dashboardRoutes } from './dashboard/dashboard-routes.ts';
import { page } from './dashboard/layout.ts';
import { html } from './html.ts';
import { errorBody, makeErrorHandler } from './error-handler.ts';
import { MemoryRateLimitStore, type RateLimitStore } from '../services/rate-limit/rate-limit.ts';
import { requestLogger } from './request-logger.ts';
import { accountRoutes } from './routes/account.ts';
import { pricingRoutes } from './routes/pricing.ts';
import { deliveryReportRoutes } from './routes/delivery-reports.ts';
import { docsRoutes } from './routes/docs.ts';
import { OPENAPI_PATH, openApiRoute, registerOpenApi } from './openapi.ts';
import { healthRoutes, type DeliveryStatus } from './routes/health.ts';
import { linkRoutes } from './routes/links.ts';
import { smsLinkRoutes } from './routes/sms-links.ts';
import { inboundRoutes } from './routes/inbound.ts';
import { numberRoutes } from './routes/numbers.ts';
import { optOutRoutes } from './routes/opt-outs.ts';
import { auditEventRoutes } from './routes/audit-events.ts';
import { privacyRoutes } from './routes/privacy.ts';
import { senderIdRoutes } from './routes/sender-ids.ts';
import { smsRoutes } from './routes/sms.ts';
import { webhookRoutes } from './routes/webhooks.ts';
import { TWILIO_PREFIX, twilioRoutes } from './routes/twilio.ts';
import { TWILIO_VERIFY_PREFIX, twilioVerifyRoutes } from './routes/twilio-verify.ts';

export interface AppOptions {
  ctx: Context;
  carrier?: Carrier | null;
  rateLimits?: RateLimitStore;
  /** The process logger; none in tests. */
  logger?: Logger;
  /** The supervised delivery process of `pigeon serve`, for `/ready` and `/metrics`. */
  delivery?: DeliveryStatus;
}

/**
 * Bodies are validated without type coercion (a number where a string belongs is a 400, not a
 * silent conversion); query strings are coerced, since every query value arrives as text.
 */
function validatorCompiler() {
  const common = { allErrors: false, useDefaults: true, removeAdditional: false, strict: false } as const;
  const strict = new Ajv({ ...common, coerceTypes: false });
  const coercing = new Ajv({ ...common, coerceTypes: 'array' });
  return ({ schema, httpPart }: { schema: object; httpPart?: string }) =>
    (httpPart === 'querystring' || httpPart === 'params' || httpPart === 'headers' ? coercing : strict).compile(schema);
}

/**
 * What Node's HTTP parser refuses before Fastify sees a request (a request that did not arrive in
 * time, oversized headers, bytes that are not HTTP) gets the same catalogued JSON body as the rest.
 */
function clientErrorHandler(publicUrl: string) {
  return (err: Error & { code?: string }, socket: Duplex): void => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const code: ErrorCode =
      err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'request_timeout' : err.code === 'HPE_HEADER_OVERFLOW' ? 'headers_too_large' : 'invalid_request';
    const status = catalogue[code].status;
    const body = JSON.stringify(errorBody(publicUrl, code, code === 'invalid_request' ? 'The request is not valid HTTP.' : undefined));
    if (socket.writable) {
      socket.write(
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy(err);
  };
}

/** Route paths and their methods, so that a wrong method on a known path is a 405, not a 404. */
function methodIndex() {
  const routes: { pattern: RegExp; methods: Set<string> }[] = [];
  return {
    add(url: string, methods: string[]) {
      const pattern = new RegExp(`^${url.replace(/:[^/]+/g, '[^/]+')}/?$`);
      let entry = routes.find((r) => r.pattern.source === pattern.source);
      if (!entry) routes.push((entry = { pattern, methods: new Set() }));
      for (const m of methods) entry.methods.add(m);
    },
    allowed(path: string): string[] {
      return routes.filter((r) => r.pattern.test(path)).flatMap((r) => [...r.methods]);
    },
  };
}

/**
 * `GET /`: where a newcomer lands after starting Pigeon. A browser gets a page of links (the
 * owner dashboard, the operator console, the docs, health); an API client gets the same links
 * as JSON, absolute from PUBLIC_URL.
 */
function rootRoutes(publicUrl: string) {
  const links = {
    dashboard: `${publicUrl}/dashboard`,
    operator: `${publicUrl}/operator`,
    docs: `${publicUrl}/docs`,
    guides: `${publicUrl}/docs/guides`,
    errors: `${publicUrl}/docs/errors`,
    openapi: `${publicUrl}${OPENAPI_PATH}`,
    health: `${publicUrl}/health`,
  };
  const landing = page({
    title: 'Pigeon SMS gateway',
    area: 'owner',
    body: html`<section><p>This server runs Pigeon, a business SMS API. Where to go next:</p>
<ul class="links">
<li><a href="/dashboard">Dashboard</a>: sign up or log in to manage API keys, Sender IDs, messages and credits.</li>
<li><a href="/docs/guides/quick-start">Quick start</a> and the other <a href="/docs/guides">guides</a>.</li>
<li><a href="/docs">API reference</a> (OpenAPI: <a href="${OPENAPI_PATH}"><code>${OPENAPI_PATH}</code></a>) and the <a href="/docs/errors">error codes</a>.</li>
<li><a href="/operator">Operator console</a>: Sender ID review, accounts, the mail outbox.</li>
<li><a href="/health"><code>/health</code></a>: whether the server is up.</li>
</ul></section>`,
  });
  // Read once: the icon is tiny and never changes while the process runs.
  const favicon = readFileSync(new URL('./dashboard/assets/favicon.svg', import.meta.url));
  return async (app: FastifyInstance) => {
    app.get('/', { schema: { hide: true } }, async (request, reply) => {
      reply.header('vary', 'accept');
      // Browsers name text/html first; curl's `*/*` and API clients get JSON.
      if (/^\s*text\/html/i.test(request.headers.accept ?? '')) {
        return reply.type('text/html; charset=utf-8').send(landing);
      }
      return { status: 'success', data: { name: 'Pigeon', links } };
    });
    // Browsers ask for /favicon.ico whatever the page links to; the SVG answers it.
    app.get('/favicon.ico', { schema: { hide: true } }, async (_request, reply) =>
      reply.type('image/svg+xml').header('cache-control', 'public, max-age=86400').send(favicon),
    );
  };
}

export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const { ctx } = opts;
  const app = Fastify({
    ...(opts.logger ? { loggerInstance: opts.logger, childLoggerFactory: requestLogger } : { logger: false }),
    // Fastify's own request lines are two per request with the whole request serialised; the
    // onResponse hook below writes one short line instead.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: ctx.config.bodyLimitBytes,
    // Slow-loris guard: a request must arrive whole within this time.
    requestTimeout: ctx.config.requestTimeoutMs,
    // Node only checks that deadline every connectionsCheckingInterval (30 s by default), and the
    // headers have a deadline of their own; both follow REQUEST_TIMEOUT_MS so it means what it says.
    http: {
      headersTimeout: ctx.config.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(30_000, Math.max(50, Math.floor(ctx.config.requestTimeoutMs / 4))),
    },
    connectionTimeout: 60_000,
    keepAliveTimeout: 72_000,
    return503OnClosing: true,
    // Only the listed proxies may say who the client is; anyone else's X-Forwarded-For is ignored.
    ...(ctx.config.trustProxy.length > 0 ? { trustProxy: ctx.config.trustProxy } : {}),
    clientErrorHandler: clientErrorHandler(ctx.config.publicUrl),
    // A path with broken percent-encoding never reaches a route or the error handler.
    frameworkErrors: (_error, _request, reply: FastifyReply) => {
      void reply.code(400).send(errorBody(ctx.config.publicUrl, 'invalid_request', 'The URL is not valid: it has malformed percent-encoding.'));
    },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(validatorCompiler());
  // Only JSON bodies are accepted; without a text/plain parser, other types are a 415.
  app.removeContentTypeParser(['text/plain']);
  // Fastify's JSON parser turns invalid UTF-8 into U+FFFD without a word; a message the customer
  // pays for must not go out silently garbled, so such a body is refused instead.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    if (!isUtf8(body as Buffer)) return done(new AppError('invalid_request', 'The body is not valid UTF-8.'), undefined);
    parseJson(request, (body as Buffer).toString('utf8'), done);
  });
  app.setErrorHandler(makeErrorHandler(ctx.config.publicUrl, ctx.config.bodyLimitBytes, (err) => unavailableError(ctx.store, err)));
  // Four bodies at the limit at once (20 MiB by default): room for several large bulks and
  // uploads together, while a flood of large bodies cannot multiply the memory they take.
  installBodyBudget(app as unknown as FastifyInstance, Math.max(4 * ctx.config.bodyLimitBytes, 16 * 1024 * 1024), ctx.config.bodyLimitBytes);
  installLingeringClose(app as unknown as FastifyInstance);

  // One line per request at info, unless LOG_REQUESTS=false (docs/performance.md). The query
  // string is left out: links in mail carry one-time tokens there. The line's fields are fixed and
  // hold no secret, so it skips the redaction rules, whose wildcard paths cost about five times
  // the rest of the line.
  const accessLog = ctx.config.logRequests === false || !opts.logger ? null : opts.logger.child({}, { redact: { paths: [] } });
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    httpRequests.inc({ method: request.method, route, status: reply.statusCode });
    httpDuration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
    if (accessLog?.isLevelEnabled('info')) {
      const query = request.url.indexOf('?');
      let path = query === -1 ? request.url : request.url.slice(0, query);
      // A key or secret pasted into the path by mistake (GET /v1/pk_live_...) is not written down.
      if (path.includes('pk_') || path.includes('whsec_')) path = path.replace(/(pk_live_|whsec_)[^/]*/g, '$1[redacted]');
      accessLog.info(
        {
          req: { method: request.method, url: path, accountId: request.principal?.accountId ?? null },
          res: { statusCode: reply.statusCode },
          responseTime: Math.round(reply.elapsedTime * 10) / 10,
        },
        'request',
      );
    }
  });

  const methods = methodIndex();
  app.addHook('onRoute', (route) => {
    methods.add(route.url, Array.isArray(route.method) ? route.method : [route.method]);
  });
  app.setNotFoundHandler(async (request, reply) => {
    const path = request.url.split('?')[0] ?? '/';
    const allowed = methods.allowed(path).filter((m) => m !== 'HEAD');
    if (allowed.length > 0) {
      reply.header('Allow', allowed.join(', '));
      return reply.code(405).send(errorBody(ctx.config.publicUrl, 'method_not_allowed', `${request.method} is not allowed here; use ${allowed.join(' or ')}.`));
    }
    // The path is echoed for the caller's sake, but not an API key pasted into it by mistake (it
    // would end up in every proxy and client log that records error bodies); nor is a huge path.
    const shown = path.replace(/pk_live_[0-9A-Za-z]{4,}/g, 'pk_live_[redacted]').slice(0, 200);
    return reply.code(404).send(errorBody(ctx.config.publicUrl, 'not_found', `No route ${request.method} ${shown}.`));
  });

  // Before any route: @fastify/swagger learns the routes as they are added.
  await registerOpenApi(app, ctx.config.publicUrl);
  openApiRoute(app);
  await app.register(healthRoutes(ctx, opts.carrier ?? null, opts.delivery ?? null));
  await app.register(docsRoutes);
  await app.register(rootRoutes(ctx.config.publicUrl));
  await app.register(dashboardRoutes(ctx));
  const rateLimits = opts.rateLimits ?? new MemoryRateLimitStore();
  const authFailures = authFailureCounter(ctx, rateLimits);
  await app.register(twilioRoutes(ctx, rateLimits, authFailures), { prefix: TWILIO_PREFIX });
  await app.register(twilioVerifyRoutes(ctx, rateLimits, authFailures), { prefix: TWILIO_VERIFY_PREFIX });
  await app.register(linkRoutes(ctx, rateLimits));
  await app.register(
    async (v1) => {
      installAuth(v1, ctx, rateLimits, authFailures);
      await v1.register(smsRoutes(ctx));
      await v1.register(senderIdRoutes(ctx));
      await v1.register(deliveryReportRoutes(ctx));
      await v1.register(smsLinkRoutes(ctx));
      await v1.register(webhookRoutes(ctx));
      await v1.register(accountRoutes(ctx));
      await v1.register(pricingRoutes(ctx));
      await v1.register(numberRoutes(ctx));
      await v1.register(inboundRoutes(ctx));
      await v1.register(optOutRoutes(ctx));
      await v1.register(privacyRoutes(ctx));
      await v1.register(auditEventRoutes(ctx));
      await v1.register(verifyRoutes(ctx));
    },
    { prefix: '/v1' },
  );
  return app as unknown as FastifyInstance;
}
