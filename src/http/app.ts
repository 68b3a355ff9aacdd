/**
 * buildApp: the Fastify instance with every route, used by `pigeon serve` and injected into by
 * the API tests (no open port needed).
 */
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Ajv } from 'ajv';
import type { Logger } from 'pino';
import type { Carrier } from '../carriers/carrier.ts';
import type { Context } from '../services/context.ts';
import { installAuth } from './auth.ts';
import { errorBody, makeErrorHandler } from './error-handler.ts';
import { MemoryRateLimitStore, type RateLimitStore } from './rate-limit.ts';
import { accountRoutes } from './routes/account.ts';
import { deliveryReportRoutes } from './routes/delivery-reports.ts';
import { docsRoutes } from './routes/docs.ts';
import { healthRoutes } from './routes/health.ts';
import { senderIdRoutes } from './routes/sender-ids.ts';
import { smsRoutes } from './routes/sms.ts';

export interface AppOptions {
  ctx: Context;
  carrier?: Carrier | null;
  rateLimits?: RateLimitStore;
  /** The process logger; none in tests. */
  logger?: Logger;
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

export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const { ctx } = opts;
  const app = Fastify({
    ...(opts.logger ? { loggerInstance: opts.logger } : { logger: false }),
    // One line per request at info level costs more than the request itself under load.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: ctx.config.bodyLimitBytes,
    // Slow-loris guard: a request must arrive whole within this time.
    requestTimeout: 30_000,
    connectionTimeout: 60_000,
    keepAliveTimeout: 72_000,
    return503OnClosing: true,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(validatorCompiler());
  // Only JSON bodies are accepted; without a text/plain parser, other types are a 415.
  app.removeContentTypeParser(['text/plain']);
  app.setErrorHandler(makeErrorHandler(ctx.config.publicUrl));

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
    return reply.code(404).send(errorBody(ctx.config.publicUrl, 'not_found', `No route ${request.method} ${path}.`));
  });

  await app.register(healthRoutes(ctx, opts.carrier ?? null));
  await app.register(docsRoutes);
  await app.register(
    async (v1) => {
      installAuth(v1, ctx, opts.rateLimits ?? new MemoryRateLimitStore());
      await v1.register(smsRoutes(ctx));
      await v1.register(senderIdRoutes(ctx));
      await v1.register(deliveryReportRoutes(ctx));
      await v1.register(accountRoutes(ctx));
    },
    { prefix: '/v1' },
  );
  return app as unknown as FastifyInstance;
}
