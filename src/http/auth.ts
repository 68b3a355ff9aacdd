/**
 * The `/v1` guard, run on every request before its body is read: authenticate the key, refuse a
 * suspended account, check the route's scope, then count the request against the account's rate
 * limit. Doing this in `onRequest` means a rejected caller costs no body parsing.
 *
 * Failed authentications are also counted per client IP (AUTH_FAILURE_LIMIT per
 * AUTH_FAILURE_WINDOW_MS): past the limit, that IP gets `rate_limit_exceeded` before any key
 * lookup until the window ends, so guessing keys costs the guesser time rather than us queries.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../errors/catalogue.ts';
import { authenticate, type Principal, type Scope } from '../services/api-keys.ts';
import type { Context } from '../services/context.ts';
import { checkRateLimit, type RateLimitStore } from './rate-limit.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope a key needs for this route. */
    scope?: Scope;
    /**
     * The route's writes check the access revision as they commit (the sends): authentication
     * need not read it first (src/services/access-cache.ts).
     */
    accessCheckedAtCommit?: boolean;
  }
  interface FastifyRequest {
    principal?: Principal;
  }
}

export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error('route reached without authentication');
  return request.principal;
}

/**
 * For a route whose access is checked at commit, when the request ends without a commit (an
 * idempotent replay): authenticates the request again, reading the current access revision.
 */
export async function confirmAccess(ctx: Context, request: FastifyRequest): Promise<void> {
  if (principalOf(request).access.checked) return;
  const scope = request.routeOptions.config.scope;
  await authenticate(ctx, request.headers.authorization, scope ? { scope } : {});
}

/** The refusals that come from the key or its account: nothing to confirm before answering them. */
const ACCESS_REFUSALS = new Set(['invalid_api_key', 'api_key_revoked', 'account_suspended', 'insufficient_permissions']);

/** Codes that mean "this caller could not prove who it is", the ones a key guesser collects. */
const AUTH_FAILURES = new Set(['invalid_api_key', 'api_key_revoked']);

export function installAuth(app: FastifyInstance, ctx: Context, rateLimits: RateLimitStore): void {
  const limit = ctx.config.authFailureLimit;
  // IP -> end of the window in which it went over the limit. The counts live in `rateLimits` (shared
  // through Redis when configured); this map only spares a blocked IP's requests a store round trip.
  const blocked = new Map<string, number>();
  const refuse = (ip: string, now: number) => {
    const until = blocked.get(ip);
    if (until === undefined) return;
    if (until <= now) {
      blocked.delete(ip);
      return;
    }
    const seconds = String(Math.max(1, Math.ceil((until - now) / 1000)));
    throw new AppError('rate_limit_exceeded', `Too many failed authentications from this address. Retry after ${seconds} s.`, {
      headers: { 'Retry-After': seconds },
    });
  };

  // A request authenticated without reading the access revision (a send) may fail for another
  // reason before its commit would have re-checked access (a bad body, no credits). Its error is
  // answered only once access is confirmed, so a withdrawn key or account still answers first,
  // as the order of checks says; the confirmed error goes on to the application's handler.
  app.setErrorHandler(async (error, request) => {
    const principal = request.principal;
    if (principal && !principal.access.checked && !(error instanceof AppError && ACCESS_REFUSALS.has(error.code))) {
      await confirmAccess(ctx, request);
    }
    throw error;
  });

  app.decorateRequest('principal', undefined);
  app.addHook('onRequest', async (request, reply) => {
    const ip = request.ip;
    refuse(ip, ctx.clock());
    let principal: Principal;
    try {
      const config = request.routeOptions.config;
      principal = await authenticate(ctx, request.headers.authorization, {
        ...(config.scope ? { scope: config.scope } : {}),
        checkedAtCommit: config.accessCheckedAtCommit === true,
      });
    } catch (err) {
      if (err instanceof AppError && AUTH_FAILURES.has(err.code)) {
        const now = ctx.clock();
        const { count, resetAt } = await rateLimits.hit(`authfail:${ip}`, limit.windowMs, now);
        if (count >= limit.max) {
          if (blocked.size > 100_000) for (const [k, until] of blocked) if (until <= now) blocked.delete(k);
          blocked.set(ip, resetAt);
        }
      }
      throw err;
    }
    const verdict = await checkRateLimit(rateLimits, principal.accountId, ctx.config.rateLimit, ctx.clock());
    reply.headers(verdict.headers);
    request.principal = principal;
  });
}
