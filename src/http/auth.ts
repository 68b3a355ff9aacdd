/**
 * The `/v1` guard, run on every request before its body is read: authenticate the key, refuse a
 * suspended account, check the route's scope, then count the request against the account's rate
 * limit. Doing this in `onRequest` means a rejected caller costs no body parsing.
 *
 * Failed authentications are also counted per client address (AUTH_FAILURE_LIMIT per
 * AUTH_FAILURE_WINDOW_MS; an IPv6 client by its /64, the block one subscriber gets): past the
 * limit, that address's failing requests get `rate_limit_exceeded` instead of 401 until the window
 * ends, and are no longer counted in the (possibly shared) store. Only failing requests are
 * counted and refused: a request whose key is good always gets through, so one broken or hostile
 * client behind a shared NAT or load balancer cannot lock the others out. Keys that cannot be
 * keys (wrong shape) never reach the database; a well-formed unknown key costs one indexed read
 * of its digest, the same as before the limit.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../errors/catalogue.ts';
import { authenticate, confirmAccess, type Principal } from '../services/auth/access.ts';
import type { Scope } from '../services/keys/api-keys.ts';
import type { Context } from '../services/context.ts';
import { checkRateLimit, type RateLimitStore } from '../services/rate-limit/rate-limit.ts';
import { addressBlock } from '../webhooks/address-guard.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope a key needs for this route. */
    scope?: Scope;
    /**
     * The route's writes check the access revision as they commit (the sends): authentication
     * need not read it first (src/services/auth/access-cache.ts).
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

/** The refusals that come from the key or its account: nothing to confirm before answering them. */
const ACCESS_REFUSALS = new Set(['invalid_api_key', 'api_key_revoked', 'account_suspended', 'insufficient_permissions']);

/** Codes that mean "this caller could not prove who it is", the ones a key guesser collects. */
export const AUTH_FAILURES: ReadonlySet<string> = new Set(['invalid_api_key', 'api_key_revoked']);

/** Over-limit addresses remembered per process (each a short string and a number). */
const MAX_BLOCKED = 100_000;

/** Counts a failed authentication from an address; returns the refusal that replaces it once over the limit. */
export type AuthFailureCounter = (address: string) => Promise<AppError | null>;

/**
 * The failed-authentication limit of an app: one per app, shared by every front door that takes
 * credentials (`/v1` and the Twilio-compatible API), so a guesser gains nothing by switching.
 */
export function authFailureCounter(ctx: Context, rateLimits: RateLimitStore): AuthFailureCounter {
  const limit = ctx.config.authFailureLimit;
  // Address -> end of the window in which it went over the limit. The counts live in `rateLimits`
  // (shared through Redis when configured); this map spares an over-limit address's failures a
  // store round trip. Bounded: past MAX_BLOCKED, the ended entries go, then the oldest.
  const blocked = new Map<string, number>();
  const refuse = (until: number, now: number): AppError => {
    const seconds = String(Math.max(1, Math.ceil((until - now) / 1000)));
    return new AppError('rate_limit_exceeded', `Too many failed authentications from this address. Retry after ${seconds} s.`, {
      headers: { 'Retry-After': seconds },
    });
  };
  /** Counts a failed authentication; returns the refusal that replaces it once over the limit. */
  const countFailure = async (address: string): Promise<AppError | null> => {
    const now = ctx.clock();
    const until = blocked.get(address);
    if (until !== undefined) {
      if (until > now) return refuse(until, now);
      blocked.delete(address);
    }
    const { count, resetAt } = await rateLimits.hit(`authfail:${address}`, limit.windowMs, now);
    if (count < limit.max) return null;
    if (blocked.size >= MAX_BLOCKED) {
      for (const [k, end] of blocked) if (end <= now) blocked.delete(k);
      for (const k of blocked.keys()) {
        if (blocked.size < MAX_BLOCKED) break;
        blocked.delete(k);
      }
    }
    blocked.set(address, resetAt);
    // The failure that reaches the limit is still answered as itself; the ones after it are refused.
    return count > limit.max ? refuse(resetAt, now) : null;
  };
  return countFailure;
}

export function installAuth(app: FastifyInstance, ctx: Context, rateLimits: RateLimitStore, countFailure = authFailureCounter(ctx, rateLimits)): void {
  // A request authenticated without reading the access revision (a send) may fail for another
  // reason before its commit would have re-checked access (a bad body, no credits). Its error is
  // answered only once access is confirmed, so a withdrawn key or account still answers first,
  // as the order of checks says; the confirmed error goes on to the application's handler.
  app.setErrorHandler(async (error, request) => {
    const principal = request.principal;
    if (principal && !principal.access.checked && !(error instanceof AppError && ACCESS_REFUSALS.has(error.code))) {
      await confirmAccess(ctx, principal);
    }
    throw error;
  });

  app.decorateRequest('principal', undefined);
  app.addHook('onRequest', async (request, reply) => {
    let principal: Principal;
    try {
      const config = request.routeOptions.config;
      principal = await authenticate(ctx, request.headers.authorization, {
        ...(config.scope ? { scope: config.scope } : {}),
        checkedAtCommit: config.accessCheckedAtCommit === true,
      });
    } catch (err) {
      if (err instanceof AppError && AUTH_FAILURES.has(err.code)) throw (await countFailure(addressBlock(request.ip))) ?? err;
      throw err;
    }
    const verdict = await checkRateLimit(rateLimits, principal.accountId, ctx.config.rateLimit, ctx.clock());
    reply.headers(verdict.headers);
    request.principal = principal;
  });
}
