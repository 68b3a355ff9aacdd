/**
 * Multi-row inserts on the hot paths (messages, jobs, ledger rows), written with Kysely once per
 * table, column list and row count, then only re-bound: building and compiling a large insert
 * costs more than the database spends executing it. Rows must all have the same columns.
 */
import type { Executor } from './connect.ts';
import { CompiledQuery, type Kysely } from 'kysely';
import type { Database } from './database.ts';
import { dialectOf } from './dialect.ts';
import { chunked } from './chunk.ts';

interface Template {
  sql: string;
  /** For each parameter: [row index, column index]. */
  slots: [number, number][];
}

const MARKER = /^\u0000r(\d+)c(\d+)\u0000$/;
const templates = new Map<string, Template>();

function template(db: Executor, table: keyof Database, columns: string[], rows: number, skipExisting: boolean): Template {
  // The SQL text depends on the dialect.
  const key = `${dialectOf(db)}|${table}|${columns.join(',')}|${rows}|${skipExisting}`;
  let t = templates.get(key);
  if (!t) {
    const values = Array.from({ length: rows }, (_, r) => Object.fromEntries(columns.map((c, i) => [c, `\u0000r${r}c${i}\u0000`])));
    const insert = db.insertInto(table).values(values as never);
    const compiled = (skipExisting ? insert.onConflict((oc) => oc.doNothing()) : insert).compile();
    t = {
      sql: compiled.sql,
      slots: compiled.parameters.map((p) => {
        const m = MARKER.exec(String(p));
        if (!m) throw new Error(`unexpected constant in the insert template of ${table}`);
        return [Number(m[1]), Number(m[2])];
      }),
    };
    if (templates.size > 2000) templates.clear();
    templates.set(key, t);
  }
  return t;
}

/** Inserts the rows; with `skipExisting`, a row whose key is already taken is left out, not an error. */
export async function insertRows<T extends object>(db: Executor, table: keyof Database, rows: readonly T[], opts: { skipExisting?: boolean } = {}): Promise<void> {
  if (rows.length === 0) return;
  const columns = Object.keys(rows[0]!);
  for (const part of chunked(rows, columns.length)) {
    // Chunks of one size share one template; a short tail gets its own.
    const t = template(db, table, columns, part.length, opts.skipExisting ?? false);
    const parameters = t.slots.map(([r, c]) => (part[r] as Record<string, unknown>)[columns[c]!]);
    await db.executeQuery(CompiledQuery.raw(t.sql, parameters));
  }
}
