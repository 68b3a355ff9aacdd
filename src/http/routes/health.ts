/** Unauthenticated probes for process supervisors and load balancers. */
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import type { Carrier } from '../../carriers/carrier.ts';
import type { Context } from '../../services/context.ts';
import { migrationsCurrent } from '../../store/migrate.ts';

export function healthRoutes(ctx: Context, carrier: Carrier | null) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get('/health', async () => ({ status: 'ok' }));
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
