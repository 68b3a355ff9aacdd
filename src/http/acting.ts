/**
 * Who is acting in a request, for the audit log: the operator or the person signed in to the
 * dashboard (their session guard put them on the request), or the API key of a `/v1` request.
 * A handler that changes something passes `acting(ctx, request)` to the service instead of `ctx`;
 * the service records the change with this actor and the client's address.
 */
import type { FastifyRequest } from 'fastify';
import { actingAs } from '../services/audit/audit.ts';
import type { Context } from '../services/context.ts';

export function acting(ctx: Context, request: FastifyRequest): Context {
  const operator = request.operator?.operator;
  if (operator) return actingAs(ctx, { type: 'operator', id: operator.id, email: operator.email }, request.ip);
  const owner = request.owner?.owner;
  if (owner) return actingAs(ctx, { type: 'member', id: owner.id, email: owner.email }, request.ip);
  const principal = request.principal;
  if (principal) return actingAs(ctx, { type: 'api_key', id: principal.keyId, email: null }, request.ip);
  return { ...ctx, acting: { actor: { type: 'system', id: null, email: null }, ip: request.ip } };
}
