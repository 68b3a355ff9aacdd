/** What the readiness probe asks of the database. */
import { ping } from '../store/connect.ts';
import { migrationsCurrent } from '../store/migrate.ts';
import type { Context } from './context.ts';

export interface DatabaseReadiness {
  database: 'ok' | 'unreachable';
  /** Absent when the database could not be reached. */
  migrations?: 'ok' | 'pending';
  ready: boolean;
}

export async function databaseReadiness(ctx: Context): Promise<DatabaseReadiness> {
  try {
    await ping(ctx.store);
    const current = await migrationsCurrent(ctx.store.db);
    return { database: 'ok', migrations: current ? 'ok' : 'pending', ready: current };
  } catch {
    return { database: 'unreachable', ready: false };
  }
}
