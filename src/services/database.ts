/**
 * The database as the command line and the readiness probe see it: apply the migrations, and
 * check that a database answers and is current. Commands reach the store only through here.
 */
import { openStore, ping } from '../store/connect.ts';
import { migrateToLatest, migrationsCurrent } from '../store/migrate.ts';
import { smppRouteRows } from '../store/repositories/smpp-routes.repository.ts';
import type { SmppRouteConfig } from '../config/smpp-config.ts';
import type { Context } from './context.ts';
import { routeConfigOf } from './routes/routes.ts';

/** Applies the migrations the database lacks; returns their names, empty when none was pending. */
export function migrateDatabase(ctx: Pick<Context, 'store'>): Promise<string[]> {
  return migrateToLatest(ctx.store.db);
}

/** Whether every migration this version knows has been applied to the context's database. */
export function databaseIsCurrent(ctx: Pick<Context, 'store'>): Promise<boolean> {
  return migrationsCurrent(ctx.store.db);
}

/** A connection opened only to look at a database (`pigeon doctor`): it never creates or migrates one. */
export interface DatabaseProbe {
  dialect: 'sqlite' | 'postgres';
  /** Resolves when the database answers a query. */
  ping(): Promise<void>;
  /** Whether every known migration has been applied. */
  migrationsCurrent(): Promise<boolean>;
  /** The SMPP routes of the database (what workers bind to once the table has any). */
  smppRoutes(): Promise<SmppRouteConfig[]>;
  close(): Promise<void>;
}

export function probeDatabase(databaseUrl: string): DatabaseProbe {
  const store = openStore(databaseUrl);
  return {
    dialect: store.dialect,
    ping: () => ping(store),
    migrationsCurrent: () => migrationsCurrent(store.db),
    smppRoutes: async () => (await smppRouteRows(store.db)).map(routeConfigOf),
    close: () => store.close(),
  };
}
