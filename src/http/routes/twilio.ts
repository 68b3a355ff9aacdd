/**
 * The Twilio-compatible Messages API under `/2010-04-01` (DECISIONS.md §12): form-encoded bodies,
 * HTTP Basic auth with the Account SID, JSON answers and errors shaped as Twilio's, so that code
 * written for the official `twilio` packages runs against Pigeon with its base URL changed.
 * Every send goes through the one acceptance of `/v1` (src/services/twilio/twilio-messages.ts).
 */
import { actingAs } from '../../services/audit/audit.ts';
import { isUtf8 } from 'node:buffer';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../errors/catalogue.ts';
import { twilioCatalogue, twilioErrorFor, TwilioError, type TwilioCode } from '../../errors/twilio-catalogue.ts';
import type { Context } from '../../services/context.ts';
import { unavailableError } from '../../services/availability.ts';
import { authenticateTwilio, type TwilioCaller } from '../../services/twilio/credentials.ts';
import {
  createTwilioMessage,
  deleteTwilioMessage,
  fetchTwilioMessage,
  listTwilioMessages,
  updateTwilioMessage,
  type TwilioListQuery,
  type TwilioParams,
} from '../../services/twilio/twilio-messages.ts';
import { AUTH_FAILURES, type AuthFailureCounter } from '../auth.ts';
import { checkRateLimit, type RateLimitStore } from '../../services/rate-limit/rate-limit.ts';
import { addressBlock } from '../../webhooks/address-guard.ts';

export const TWILIO_PREFIX = '/2010-04-01';

declare module 'fastify' {
  interface FastifyRequest {
    twilio?: TwilioCaller;
  }
}

/** Twilio's error body, and nothing else: its clients read exactly these four keys. */
export function twilioErrorBody(publicUrl: string, code: TwilioCode, status: number, message: string) {
  return { code, message, more_info: `${publicUrl}/docs/guides/moving-from-twilio#error-codes`, status };
}

function send(reply: FastifyReply, publicUrl: string, code: TwilioCode, status: number, message: string, headers?: Record<string, string>) {
  if (headers) reply.headers(headers);
  return reply.code(status).type('application/json; charset=utf-8').send(twilioErrorBody(publicUrl, code, status, message));
}

/** Form bodies, with repeated names as lists (MediaUrl may come several times). */
function parseForm(body: Buffer): TwilioParams {
  if (!isUtf8(body)) throw new TwilioError(20001, 'The body is not valid UTF-8.');
  const out: TwilioParams = {};
  for (const [name, value] of new URLSearchParams(body.toString('utf8'))) {
    const seen = out[name];
    out[name] = seen === undefined ? value : [...(Array.isArray(seen) ? seen : [seen]), value];
  }
  return out;
}

export function callerOf(request: FastifyRequest): TwilioCaller {
  if (!request.twilio) throw new Error('route reached without authentication');
  return request.twilio;
}

/** `Messages/SM….json`: the SID, or a 404 for any other last segment. */
function sidOf(file: string): string {
  if (!file.endsWith('.json')) throw new AppError('not_found', 'No message with this SID.');
  return file.slice(0, -'.json'.length);
}

function stringsOf(query: unknown): TwilioListQuery {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    if (typeof v !== 'string') throw new TwilioError(20001, `'${k}' was given more than once.`);
    out[k] = v;
  }
  return out as TwilioListQuery;
}

/**
 * What every Twilio-compatible surface shares (Messages under `/2010-04-01`, Verify under `/v2`):
 * form bodies, Twilio's error body, Basic auth before the body is read, the account's rate limit.
 * `mapError` turns a Pigeon error into the surface's Twilio code; with `pathAccountSid`, the
 * path's `{AccountSid}` must be the caller's, else the resource does not exist for it.
 */
export function installTwilioSurface(
  app: FastifyInstance,
  ctx: Context,
  rateLimits: RateLimitStore,
  countFailure: AuthFailureCounter,
  options: { mapError: (error: AppError) => { code: TwilioCode; status: number; message: string }; pathAccountSid: boolean },
): void {
  const publicUrl = ctx.config.publicUrl;
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'buffer' }, (_request, body, done) => {
    try {
      done(null, parseForm(body as Buffer));
    } catch (error) {
      done(error as Error, undefined);
    }
  });

  app.setErrorHandler((raw: FastifyError | AppError | TwilioError, request, reply) => {
    const error = unavailableError(ctx.store, raw) ?? raw;
    if (error instanceof TwilioError) return send(reply, publicUrl, error.code, error.status, error.message);
    if (error instanceof AppError) {
      const mapped = options.mapError(error);
      return send(reply, publicUrl, mapped.code, mapped.status, mapped.message, error.headers);
    }
    const fastifyError = error as FastifyError;
    if (fastifyError.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return send(reply, publicUrl, 20001, 413, 'The request body is too large.');
    if (fastifyError.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || fastifyError.statusCode === 415) {
      return send(reply, publicUrl, 20001, 415, 'Send the parameters form-encoded (application/x-www-form-urlencoded).');
    }
    if (fastifyError.statusCode !== undefined && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
      return send(reply, publicUrl, 20001, 400, 'The request could not be read.');
    }
    request.log.error({ err: error }, 'unhandled error');
    return send(reply, publicUrl, 20500, 500, twilioCatalogue[20500].message);
  });

  app.setNotFoundHandler((_request, reply) => send(reply, publicUrl, 20404, 404, twilioCatalogue[20404].message));

  // Authentication before the body is read, as on /v1.
  app.addHook('onRequest', async (request, reply) => {
    let caller: TwilioCaller;
    try {
      caller = await authenticateTwilio(ctx, request.headers.authorization, request.routeOptions.config.scope ?? 'reports:read');
    } catch (err) {
      if (err instanceof AppError && AUTH_FAILURES.has(err.code)) {
        reply.header('WWW-Authenticate', 'Basic realm="Twilio API"');
        throw (await countFailure(addressBlock(request.ip))) ?? err;
      }
      throw err;
    }
    if (options.pathAccountSid) {
      const pathSid = (request.params as { AccountSid?: string }).AccountSid;
      if (pathSid !== caller.accountSid) throw new AppError('not_found', 'The AccountSid in the path is not the one authenticated.');
    }
    const verdict = await checkRateLimit(rateLimits, caller.accountId, ctx.config.rateLimit, ctx.clock());
    reply.headers(verdict.headers);
    request.twilio = caller;
  });
}

export function twilioRoutes(ctx: Context, rateLimits: RateLimitStore, countFailure: AuthFailureCounter) {
  return async (app: FastifyInstance) => {
    installTwilioSurface(app, ctx, rateLimits, countFailure, { mapError: twilioErrorFor, pathAccountSid: true });

    const list = '/Accounts/:AccountSid/Messages.json';
    const one = '/Accounts/:AccountSid/Messages/:file';
    const hidden = { hide: true } as const;

    app.post(list, { config: { scope: 'sms:send' }, schema: hidden }, async (request, reply) => {
      const message = await createTwilioMessage(ctx, callerOf(request), (request.body ?? {}) as TwilioParams);
      return reply.code(201).send(message);
    });
    app.get(list, { config: { scope: 'reports:read' }, schema: hidden }, async (request) => listTwilioMessages(ctx, callerOf(request), stringsOf(request.query)));
    app.get(one, { config: { scope: 'reports:read' }, schema: hidden }, async (request) =>
      fetchTwilioMessage(ctx, callerOf(request), sidOf((request.params as { file: string }).file)),
    );
    app.post(one, { config: { scope: 'sms:send' }, schema: hidden }, async (request) =>
      updateTwilioMessage(ctx, callerOf(request), sidOf((request.params as { file: string }).file), (request.body ?? {}) as TwilioParams),
    );
    app.delete(one, { config: { scope: 'sms:send' }, schema: hidden }, async (request, reply) => {
      // Recorded as the Twilio-style account credentials (the Account SID) that made the call.
      await deleteTwilioMessage(actingAs(ctx, { type: 'api_key', id: callerOf(request).accountSid, email: null }, request.ip), callerOf(request), sidOf((request.params as { file: string }).file));
      return reply.code(204).send();
    });
  };
}
