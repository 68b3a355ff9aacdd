/**
 * Multi-row inserts on the hot paths (messages, jobs, ledger rows). Kysely compiles one row's
 * insert once per table and column list; the SQL of many rows is that statement's head followed
 * by its tuple repeated, so a batch of a new size costs a string, not a compile of every row
 * through Kysely (which took milliseconds for a batch of a few hundred and made a batch that
 * came late, being larger, later still). Rows must all have the same columns.
 *
 * On SQLite a batch goes as chunks of power-of-two sizes: better-sqlite3 prepares a statement per
 * SQL text, so each distinct row count is a prepare and an entry in the statement cache, and
 * batch sizes vary with the load; powers of two bound them to a dozen per table, kept prepared.
 * On PostgreSQL each statement is a round trip, so a chunk is as large as the limit allows.
 */
import { CompiledQuery } from 'kysely';
import type { Executor } from './connect.ts';
import type { Database } from './database.ts';
import { dialectOf, type DialectName } from './dialect.ts';

interface Shape {
  /** `insert into "t" ("a", "b") values ` */
  head: string;
  /** What follows the tuples: ` on conflict do nothing`, or nothing. */
  tail: string;
  columns: number;
  /** SQL text by row count. */
  sql: Map<number, string>;
}

/** Parameters a statement may bind: SQLite allows 32,766, PostgreSQL 65,535. */
const MAX_PARAMETERS = 30_000;
const MARKER = /^\u0000c(\d+)\u0000$/;
const shapes = new Map<string, Shape>();

function shape(db: Executor, dialect: DialectName, table: keyof Database, columns: string[], skipExisting: boolean): Shape {
  const key = `${dialect}|${table}|${skipExisting}|${columns.join(',')}`;
  let s = shapes.get(key);
  if (!s) {
    const values = Object.fromEntries(columns.map((c, i) => [c, `\u0000c${i}\u0000`]));
    const insert = db.insertInto(table).values(values as never);
    const compiled = (skipExisting ? insert.onConflict((oc) => oc.doNothing()) : insert).compile();
    // The row's values must be its parameters, in column order, for the tuple to be repeated.
    compiled.parameters.forEach((p, i) => {
      if (MARKER.exec(String(p))?.[1] !== String(i)) throw new Error(`unexpected constant in the insert template of ${table}`);
    });
    const at = compiled.sql.indexOf(' values (');
    const end = compiled.sql.indexOf(')', at);
    if (at < 0 || end < 0 || compiled.parameters.length !== columns.length) throw new Error(`unexpected insert template of ${table}`);
    s = { head: compiled.sql.slice(0, at + ' values '.length), tail: compiled.sql.slice(end + 1), columns: columns.length, sql: new Map() };
    if (shapes.size > 200) shapes.clear();
    shapes.set(key, s);
  }
  return s;
}

/** The SQL `insertRows` sends for `rows` rows: for tests, against Kysely's own. */
export function insertSqlFor(db: Executor, table: keyof Database, columns: string[], rows: number, skipExisting = false): string {
  const dialect = dialectOf(db);
  return insertSql(shape(db, dialect, table, columns, skipExisting), dialect, rows);
}

/**
 * The SQL of `rows` rows of the shape, as Kysely writes it: `(?, ?), (?, ?)` or `($1, $2), ($3, $4)`;
 * on PostgreSQL numbered from `first` (a statement that has parameters before them).
 */
function insertSql(s: Shape, dialect: DialectName, rows: number, first = 1): string {
  let text = first === 1 ? s.sql.get(rows) : undefined;
  if (text === undefined) {
    const tuples: string[] = [];
    for (let r = 0, n = first; r < rows; r++) {
      const slots: string[] = [];
      for (let c = 0; c < s.columns; c++) slots.push(dialect === 'postgres' ? `$${n++}` : '?');
      tuples.push(`(${slots.join(', ')})`);
    }
    text = s.head + tuples.join(', ') + s.tail;
    // Kept for the sizes that recur (on SQLite every size is a power of two).
    if (first === 1 && s.sql.size < 64) s.sql.set(rows, text);
  }
  return text;
}

/** The largest power of two that is at most `n`. */
function floorPowerOfTwo(n: number): number {
  return 2 ** Math.floor(Math.log2(n));
}

/** The values of `rows`, row after row, in the order of `columns`. */
function parametersOf(rows: readonly object[], columns: readonly string[]): unknown[] {
  const parameters: unknown[] = new Array(rows.length * columns.length);
  let p = 0;
  for (const row of rows as readonly Record<string, unknown>[]) {
    for (const column of columns) parameters[p++] = row[column];
  }
  return parameters;
}

/**
 * The insert of all `rows` as one PostgreSQL statement whose parameters are numbered from `first`,
 * to be part of a larger statement (a data-modifying WITH); null when they would take more
 * parameters than a statement may bind with the `first - 1` before them. `rows` is not empty.
 */
export function insertStatementOf(db: Executor, table: keyof Database, rows: readonly object[], first: number): { sql: string; parameters: unknown[] } | null {
  const columns = Object.keys(rows[0]!);
  if (first - 1 + rows.length * columns.length > MAX_PARAMETERS) return null;
  const s = shape(db, 'postgres', table, columns, false);
  return { sql: insertSql(s, 'postgres', rows.length, first), parameters: parametersOf(rows, columns) };
}

/** Inserts the rows; with `skipExisting`, a row whose key is already taken is left out, not an error. */
export async function insertRows<T extends object>(db: Executor, table: keyof Database, rows: readonly T[], opts: { skipExisting?: boolean } = {}): Promise<void> {
  if (rows.length === 0) return;
  const columns = Object.keys(rows[0]!);
  const dialect = dialectOf(db);
  const s = shape(db, dialect, table, columns, opts.skipExisting ?? false);
  const limit = Math.max(1, Math.floor(MAX_PARAMETERS / columns.length));
  for (let start = 0; start < rows.length; ) {
    const left = Math.min(rows.length - start, limit);
    const size = dialect === 'sqlite' ? floorPowerOfTwo(left) : left;
    const chunk = start === 0 && size === rows.length ? rows : rows.slice(start, start + size);
    await db.executeQuery(CompiledQuery.raw(insertSql(s, dialect, size), parametersOf(chunk, columns)));
    start += size;
  }
}
