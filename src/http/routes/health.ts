/** Unauthenticated probes for process supervisors and load balancers. */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Carrier } from '../../carriers/carrier.ts';
import type { Context } from '../../services/context.ts';
import { databaseReadiness } from '../../services/health.ts';
import { AggregatorRegistry } from 'prom-client';
import { registerQueueGauges, registry } from '../../metrics.ts';
import { errorBody } from '../error-handler.ts';
import { inRanges, isLoopbackAddress } from '../../webhooks/address-guard.ts';

/** Compares digests in constant time, so response timing says nothing about the token's characters. */
function sameSecret(given: string, expected: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/**
 * Whether the request comes from a program on this host, not through a proxy. A request from a
 * proxy (one listed in TRUST_PROXY, or any peer that says it forwards by sending `Forwarded`,
 * `X-Forwarded-For` or `X-Real-IP`) is not, even when that proxy runs on loopback: the client it
 * speaks for may be anywhere.
 */
function isLoopbackClient(request: FastifyRequest, trustProxy: readonly string[]): boolean {
  const peer = request.raw.socket.remoteAddress;
  if (!isLoopbackAddress(peer)) return false;
  if (trustProxy.length > 0 && inRanges(peer!, trustProxy)) return false;
  const h = request.headers;
  return h.forwarded === undefined && h['x-forwarded-for'] === undefined && h['x-real-ip'] === undefined;
}

/**
 * The delivery process `pigeon serve` supervises (src/delivery-process.ts): whether it runs, its
 * carrier's state, and its metrics, which are the dispatch, receipt and webhook counters.
 */
export interface DeliveryStatus {
  status(): { workers: { ready: boolean; detail: string }; carrier: { ready: boolean; detail: string } };
  metrics(): Promise<unknown[] | null>;
}

export function healthRoutes(ctx: Context, carrier: Carrier | null, delivery: DeliveryStatus | null = null) {
  return async (app: FastifyInstance): Promise<void> => {
    registerQueueGauges(ctx.store, ctx.clock);
    app.get('/health', async () => ({ status: 'ok' }));
    app.get('/metrics', async (request, reply) => {
      // With METRICS_TOKEN, whoever has the token; without it, only a scraper on this host: the
      // metrics name routes, volumes and queue depths, which are nobody else's business.
      const token = ctx.config.metricsToken;
      if (token && !sameSecret(request.headers.authorization ?? '', `Bearer ${token}`)) {
        return reply.code(401).send(errorBody(ctx.config.publicUrl, 'invalid_api_key', 'The metrics token is missing or wrong.'));
      }
      if (!token && !isLoopbackClient(request, ctx.config.trustProxy)) {
        return reply
          .code(403)
          .send(errorBody(ctx.config.publicUrl, 'insufficient_permissions', '/metrics is served to clients on this host only; set METRICS_TOKEN to scrape it from elsewhere.'));
      }
      const theirs = await delivery?.metrics();
      if (!theirs) return reply.type(registry.contentType).send(await registry.metrics());
      // One page for the server: this process's counters added to its delivery process's.
      const both = AggregatorRegistry.aggregate([await registry.getMetricsAsJSON(), theirs as Parameters<typeof AggregatorRegistry.aggregate>[0][number]]);
      return reply.type(registry.contentType).send(await both.metrics());
    });
    app.get('/ready', async (_request, reply) => {
      const checks: Record<string, string> = {};
      const database = await databaseReadiness(ctx);
      checks.database = database.database;
      if (database.migrations) checks.migrations = database.migrations;
      let ready = database.ready;
      if (delivery) {
        const status = delivery.status();
        checks.workers = status.workers.ready ? 'ok' : status.workers.detail;
        checks.carrier = status.carrier.ready ? 'ok' : status.carrier.detail;
        ready &&= status.workers.ready && status.carrier.ready;
      } else if (carrier) {
        const status = carrier.status();
        checks.carrier = status.ready ? 'ok' : status.detail;
        ready &&= status.ready;
      }
      return reply.code(ready ? 200 : 503).send({ status: ready ? 'ok' : 'unavailable', checks });
    });
  };
}
