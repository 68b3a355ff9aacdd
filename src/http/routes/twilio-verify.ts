/**
 * Twilio's Verify v2 under `/v2` (DECISIONS.md §14), with the credentials, form bodies and error
 * body of the Messages surface (src/http/routes/twilio.ts) and Verify's own error codes. Every
 * operation runs the `/v1/verify` functions (src/services/twilio/twilio-verify.ts).
 */
import type { FastifyInstance } from 'fastify';
import { twilioVerifyErrorFor } from '../../errors/twilio-catalogue.ts';
import type { Context } from '../../services/context.ts';
import type { RateLimitStore } from '../../services/rate-limit/rate-limit.ts';
import type { TwilioParams } from '../../services/twilio/twilio-messages.ts';
import {
  checkTwilioVerification,
  createTwilioService,
  createTwilioVerification,
  fetchTwilioService,
  fetchTwilioVerification,
  updateTwilioVerification,
} from '../../services/twilio/twilio-verify.ts';
import type { AuthFailureCounter } from '../auth.ts';
import { callerOf, installTwilioSurface } from './twilio.ts';

export const TWILIO_VERIFY_PREFIX = '/v2';

type Params = { ServiceSid: string; Sid: string };

export function twilioVerifyRoutes(ctx: Context, rateLimits: RateLimitStore, countFailure: AuthFailureCounter) {
  return async (app: FastifyInstance) => {
    installTwilioSurface(app, ctx, rateLimits, countFailure, { mapError: twilioVerifyErrorFor, pathAccountSid: false });
    const hidden = { hide: true } as const;
    const form = (body: unknown) => (body ?? {}) as TwilioParams;
    const params = (p: unknown) => p as Params;

    app.post('/Services', { config: { scope: 'account:write' }, schema: hidden }, async (request, reply) =>
      reply.code(201).send(await createTwilioService(ctx, callerOf(request), form(request.body))),
    );
    app.get('/Services/:ServiceSid', { config: { scope: 'account:write' }, schema: hidden }, async (request) =>
      fetchTwilioService(ctx, callerOf(request), params(request.params).ServiceSid),
    );
    app.post('/Services/:ServiceSid/Verifications', { config: { scope: 'sms:send' }, schema: hidden }, async (request, reply) =>
      reply.code(201).send(await createTwilioVerification(ctx, callerOf(request), params(request.params).ServiceSid, form(request.body))),
    );
    app.get('/Services/:ServiceSid/Verifications/:Sid', { config: { scope: 'sms:send' }, schema: hidden }, async (request) =>
      fetchTwilioVerification(ctx, callerOf(request), params(request.params).ServiceSid, params(request.params).Sid),
    );
    app.post('/Services/:ServiceSid/Verifications/:Sid', { config: { scope: 'sms:send' }, schema: hidden }, async (request) =>
      updateTwilioVerification(ctx, callerOf(request), params(request.params).ServiceSid, params(request.params).Sid, form(request.body)),
    );
    app.post('/Services/:ServiceSid/VerificationCheck', { config: { scope: 'sms:send' }, schema: hidden }, async (request) =>
      checkTwilioVerification(ctx, callerOf(request), params(request.params).ServiceSid, form(request.body)),
    );
  };
}
