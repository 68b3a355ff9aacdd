/** What the readiness probe asks of the database. */
import { sql } from 'kysely';
import { ping } from '../store/connect.ts';
import { migrationsCurrent } from '../store/migrate.ts';
import type { Context } from './context.ts';
import { storeProblem } from './availability.ts';

export interface DatabaseReadiness {
  /** `ok`, `unreachable`, or what keeps the store from taking writes (`disk full: …`, `read-only: …`). */
  database: string;
  /** Absent when the database could not be reached. */
  migrations?: 'ok' | 'pending';
  ready: boolean;
}

export async function databaseReadiness(ctx: Context): Promise<DatabaseReadiness> {
  try {
    await ping(ctx.store);
    if (ctx.store.dialect === 'postgres' && (await inRecovery(ctx))) {
      return { database: 'standby: the server is in recovery and takes no writes', ready: false };
    }
    const current = await migrationsCurrent(ctx.store.db);
    // A SQLite file answers reads on a full or read-only disk: only the writes fail.
    await ctx.store.condition.probe();
    const problem = storeProblem(ctx.store);
    if (problem) return { database: `${problem.check}: ${problem.detail}`, migrations: current ? 'ok' : 'pending', ready: false };
    return { database: 'ok', migrations: current ? 'ok' : 'pending', ready: current };
  } catch {
    return { database: 'unreachable', ready: false };
  }
}

/**
 * A standby answers reads, so a ping says nothing: the address may lead to a replica not yet
 * promoted. Once a primary answers, a standby problem recorded meanwhile is over.
 */
async function inRecovery(ctx: Context): Promise<boolean> {
  const { rows } = await sql<{ standby: boolean }>`select pg_is_in_recovery() as standby`.execute(ctx.store.db);
  if (rows[0]?.standby) return true;
  if (ctx.store.condition.problem?.failure === 'standby') ctx.store.condition.recovered();
  return false;
}
