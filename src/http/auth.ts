/**
 * The `/v1` guard, run on every request before its body is read: authenticate the key, refuse a
 * suspended account, check the route's scope, then count the request against the account's rate
 * limit. Doing this in `onRequest` means a rejected caller costs no body parsing.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { authenticate, requireScope, type Principal, type Scope } from '../services/api-keys.ts';
import type { Context } from '../services/context.ts';
import { checkRateLimit, type RateLimitStore } from './rate-limit.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope a key needs for this route. */
    scope?: Scope;
  }
  interface FastifyRequest {
    principal?: Principal;
  }
}

export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error('route reached without authentication');
  return request.principal;
}

export function installAuth(app: FastifyInstance, ctx: Context, rateLimits: RateLimitStore): void {
  app.decorateRequest('principal', undefined);
  app.addHook('onRequest', async (request, reply) => {
    const principal = await authenticate(ctx, request.headers.authorization);
    const scope = request.routeOptions.config.scope;
    if (scope) requireScope(principal, scope);
    const verdict = await checkRateLimit(rateLimits, principal.account.id, ctx.config.rateLimit, ctx.clock());
    reply.headers(verdict.headers);
    request.principal = principal;
  });
}
