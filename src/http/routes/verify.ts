/**
 * Verify (DECISIONS.md §14): `/v1/verify/services` (scope `account:write`), verifications and
 * checks (scope `sms:send`), the safe list (scope `account:write`).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Context } from '../../services/context.ts';
import { withIdempotency, requestHash } from '../../services/messages/idempotency.ts';
import * as verify from '../../services/verify/verify.ts';
import { AppError, docsUrl } from '../../errors/catalogue.ts';
import { principalOf } from '../auth.ts';
import { confirmAccess } from '../../services/auth/access.ts';
import { IdempotencyHeaders } from '../schemas.ts';

const Id = Type.Object({ id: Type.String({ maxLength: 64 }) });
const FraudGuard = Type.Union([Type.Literal('block'), Type.Literal('monitor'), Type.Literal('off')]);
const Countries = Type.Union([Type.Array(Type.String({ minLength: 2, maxLength: 2 }), { maxItems: 250 }), Type.Null()]);
const ServiceFields = {
  name: Type.String({ minLength: 1, maxLength: 30 }),
  from: Type.String({ minLength: 1, maxLength: 20 }),
  code_length: Type.Optional(Type.Integer({ minimum: 4, maximum: 10 })),
  lifetime_seconds: Type.Optional(Type.Integer({ minimum: 60, maximum: 3600 })),
  allowed_countries: Type.Optional(Countries),
  fraud_guard: Type.Optional(FraudGuard),
  template: Type.Optional(Type.String({ minLength: 1, maxLength: 160 })),
};
export const ServiceBody = Type.Object(ServiceFields, { additionalProperties: false });
export const ServicePatch = Type.Object(
  { ...ServiceFields, name: Type.Optional(ServiceFields.name), from: Type.Optional(ServiceFields.from) },
  { additionalProperties: false },
);
export const Service = Type.Object({
  id: Type.String(),
  name: Type.String(),
  from: Type.String(),
  code_length: Type.Integer(),
  lifetime_seconds: Type.Integer(),
  max_checks: Type.Integer(),
  max_sends: Type.Integer(),
  allowed_countries: Countries,
  fraud_guard: FraudGuard,
  template: Type.String(),
  created_at: Type.String(),
});
export const Verification = Type.Object({
  id: Type.String(),
  service_id: Type.String(),
  to: Type.String(),
  status: Type.String(),
  expires_at: Type.String(),
  sends: Type.Integer(),
  checks_left: Type.Integer(),
  message_id: Type.Union([Type.String(), Type.Null()]),
  credits_used: Type.Number(),
});
export const Check = Type.Object({ id: Type.String(), status: Type.String(), valid: Type.Boolean(), checks_left: Type.Integer() });
export const SafeListEntry = Type.Object({ entry: Type.String({ minLength: 1, maxLength: 20 }) }, { additionalProperties: false });
export const SafeListRecord = Type.Object({ entry: Type.String(), created_at: Type.String() });
const ok = <T extends Parameters<typeof Type.Object>[0][string]>(data: T) => Type.Object({ status: Type.Literal('success'), data });
export const Block = Type.Object({ account_id: Type.String(), range: Type.String(), blocked_at: Type.String(), blocked_until: Type.String(), level: Type.Integer(), sent: Type.Integer(), approved: Type.Integer() });

export function verifyRoutes(ctx: Context): FastifyPluginAsyncTypebox {
  return async (app) => {
    const tags = ['Verify'];
    app.post(
      '/verify/services',
      { config: { scope: 'account:write', errors: ['invalid_sender_id'] }, schema: { summary: 'Create a verify service', tags, body: ServiceBody, response: { 201: ok(Service) } } },
      async (request, reply) => {
        const p = principalOf(request);
        return reply.code(201).send({ status: 'success' as const, data: await verify.createService(ctx, p.accountId, p.access, request.body) });
      },
    );
    app.get('/verify/services', { config: { scope: 'account:write' }, schema: { summary: 'List verify services', tags, response: { 200: ok(Type.Array(Service)) } } }, async (request) => ({
      status: 'success' as const,
      data: await verify.listServices(ctx, principalOf(request).accountId),
    }));
    app.get('/verify/services/:id', { config: { scope: 'account:write', errors: ['not_found'] }, schema: { summary: 'Get a verify service', tags, params: Id, response: { 200: ok(Service) } } }, async (request) => ({
      status: 'success' as const,
      data: verify.serviceView(await verify.getService(ctx, principalOf(request).accountId, request.params.id)),
    }));
    app.patch(
      '/verify/services/:id',
      { config: { scope: 'account:write', errors: ['not_found', 'invalid_sender_id'] }, schema: { summary: 'Change a verify service', tags, params: Id, body: ServicePatch, response: { 200: ok(Service) } } },
      async (request) => {
        const p = principalOf(request);
        return { status: 'success' as const, data: await verify.updateService(ctx, p.accountId, p.access, request.params.id, request.body) };
      },
    );
    app.delete(
      '/verify/services/:id',
      { config: { scope: 'account:write', errors: ['not_found'] }, schema: { summary: 'Delete a verify service', tags, params: Id, response: { 204: Type.Null({ description: 'Deleted.' }) } } },
      async (request, reply) => {
        await verify.deleteService(ctx, principalOf(request).accountId, request.params.id);
        return reply.code(204).send(null);
      },
    );

    app.post(
      '/verify/services/:id/verifications',
      {
        config: {
          scope: 'sms:send',
          // As a send: the acceptance's transaction checks the access revision (src/http/auth.ts).
          accessCheckedAtCommit: true,
          errors: ['not_found', 'invalid_recipient', 'verify_country_blocked', 'verify_blocked_fraud', 'verify_max_sends', 'rate_limit_exceeded', 'insufficient_credits', 'recipient_opted_out', 'destination_not_allowed', 'idempotency_key_reused', 'idempotency_in_progress', 'service_unavailable'],
        },
        schema: {
          summary: 'Send a code (or the same code again to a pending verification)',
          description: 'A new verification, or, while one to that number is pending in the service, the same code again under its id (`sends` + 1, at most `max_sends`, at least 30 s apart).',
          tags,
          params: Id,
          headers: IdempotencyHeaders,
          body: Type.Object({ to: Type.String({ minLength: 1, maxLength: 32 }) }, { additionalProperties: false }),
          response: { 201: ok(Verification) },
        },
      },
      async (request, reply) => {
        const p = principalOf(request);
        const key = request.headers['idempotency-key'];
        const result = await withIdempotency(
          ctx,
          p.accountId,
          key,
          () => requestHash('POST', `/v1/verify/services/${request.params.id}/verifications`, request.body),
          async (finish) => {
            const { verification } = await verify.createVerification(ctx, p, request.params.id, request.body.to, finish, () => confirmAccess(ctx, p));
            return { status: 201, body: { status: 'success', data: verification } };
          },
          (err: AppError) => ({ status: err.status, body: { status: 'error', code: err.code, message: err.message, docs_url: docsUrl(ctx.config.publicUrl, err.code) } }),
        );
        if (result.replayed) {
          await confirmAccess(ctx, p);
          reply.header('Idempotent-Replayed', 'true');
        }
        return reply.code(result.status as 201).send(result.body as never);
      },
    );
    app.post(
      '/verify/services/:id/checks',
      {
        // The check is taken only while the access revision its key was checked at stands (verify.ts).
        config: { scope: 'sms:send', accessCheckedAtCommit: true, errors: ['not_found', 'invalid_recipient'] },
        schema: {
          summary: 'Check a code',
          tags,
          params: Id,
          body: Type.Object(
            { code: Type.String({ minLength: 1, maxLength: 10 }), to: Type.Optional(Type.String({ minLength: 1, maxLength: 32 })), verification_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })) },
            { additionalProperties: false },
          ),
          response: { 200: ok(Check) },
        },
      },
      async (request) => {
        const p = principalOf(request);
        const target = { ...(request.body.to !== undefined ? { to: request.body.to } : {}), ...(request.body.verification_id !== undefined ? { verification_id: request.body.verification_id } : {}) };
        const access = p.access.checked ? undefined : { revision: p.access.revision, confirm: () => confirmAccess(ctx, p) };
        return { status: 'success' as const, data: await verify.checkCode(ctx, p.accountId, request.params.id, target, request.body.code, access) };
      },
    );
    app.get('/verify/verifications/:id', { config: { scope: 'sms:send', errors: ['not_found'] }, schema: { summary: 'Get a verification', tags, params: Id, response: { 200: ok(Verification) } } }, async (request) => ({
      status: 'success' as const,
      data: await verify.getVerification(ctx, principalOf(request).accountId, request.params.id),
    }));
    app.post(
      '/verify/verifications/:id/cancel',
      { config: { scope: 'sms:send', errors: ['not_found'] }, schema: { summary: 'Cancel a pending verification', tags, params: Id, response: { 200: ok(Verification) } } },
      async (request) => ({ status: 'success' as const, data: await verify.cancelVerification(ctx, principalOf(request).accountId, request.params.id) }),
    );

    app.post(
      '/verify/safe-list',
      { config: { scope: 'account:write' }, schema: { summary: 'Add a number or range prefix to the fraud guard\'s safe list', tags, body: SafeListEntry, response: { 200: ok(Type.Object({ entry: Type.String() })), 201: ok(Type.Object({ entry: Type.String() })) } } },
      async (request, reply) => {
        const { entry, created } = await verify.addSafeListEntry(ctx, principalOf(request).accountId, request.body.entry);
        return reply.code(created ? 201 : 200).send({ status: 'success' as const, data: { entry } });
      },
    );
    app.get(
      '/verify/safe-list',
      { config: { scope: 'account:write' }, schema: { summary: 'The fraud guard\'s safe list', tags, response: { 200: ok(Type.Array(SafeListRecord)) } } },
      async (request) => ({ status: 'success' as const, data: await verify.listSafeList(ctx, principalOf(request).accountId) }),
    );
    app.delete(
      '/verify/safe-list/:entry',
      { config: { scope: 'account:write', errors: ['not_found'] }, schema: { summary: 'Remove a safe-list entry', tags, params: Type.Object({ entry: Type.String({ maxLength: 20 }) }), response: { 204: Type.Null({ description: 'Removed.' }) } } },
      async (request, reply) => {
        await verify.removeSafeListEntry(ctx, principalOf(request).accountId, request.params.entry.replace(/^ /, '+'));
        return reply.code(204).send(null);
      },
    );
    app.get(
      '/verify/blocks',
      { config: { scope: 'account:write' }, schema: { summary: 'Number ranges the fraud guard blocks for this account', tags, response: { 200: ok(Type.Array(Block)) } } },
      async (request) => ({ status: 'success' as const, data: await verify.listBlocks(ctx, principalOf(request).accountId) }),
    );
  };
}
