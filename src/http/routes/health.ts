/** Unauthenticated probes for process supervisors and load balancers. */
import { createHash, timingSafeEqual } from 'node:crypto';
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import type { Carrier } from '../../carriers/carrier.ts';
import type { Context } from '../../services/context.ts';
import { migrationsCurrent } from '../../store/migrate.ts';
import { registerQueueGauges, registry } from '../../metrics.ts';
import { errorBody } from '../error-handler.ts';

/** Compares digests in constant time, so response timing says nothing about the token's characters. */
function sameSecret(given: string, expected: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

export function healthRoutes(ctx: Context, carrier: Carrier | null) {
  return async (app: FastifyInstance): Promise<void> => {
    registerQueueGauges(ctx.store, ctx.clock);
    app.get('/health', async () => ({ status: 'ok' }));
    app.get('/metrics', async (request, reply) => {
      // Optional bearer token, for deployments where /metrics is reachable from outside.
      const token = ctx.config.metricsToken;
      if (token && !sameSecret(request.headers.authorization ?? '', `Bearer ${token}`)) {
        return reply.code(401).send(errorBody(ctx.config.publicUrl, 'invalid_api_key', 'The metrics token is missing or wrong.'));
      }
      return reply.type(registry.contentType).send(await registry.metrics());
    });
    app.get('/ready', async (_request, reply) => {
      const checks: Record<string, string> = {};
      let ready = true;
      try {
        await sql`select 1`.execute(ctx.store.db);
        checks.database = 'ok';
        const current = await migrationsCurrent(ctx.store.db);
        checks.migrations = current ? 'ok' : 'pending';
        ready &&= current;
      } catch {
        checks.database = 'unreachable';
        ready = false;
      }
      if (carrier) {
        const status = carrier.status();
        checks.carrier = status.ready ? 'ok' : status.detail;
        ready &&= status.ready;
      }
      return reply.code(ready ? 200 : 503).send({ status: ready ? 'ok' : 'unavailable', checks });
    });
  };
}
