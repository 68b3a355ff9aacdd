/** What the readiness probe asks of the database. */
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
