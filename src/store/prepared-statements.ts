/**
 * Lookups that every request makes (the API key, the Sender ID) are written once with Kysely and
 * compiled once per store; each call then only binds its arguments. On a SQLite file they run as
 * prepared statements on the read connection, without the query builder's per-call cost, which is
 * most of a small query's cost.
 */
import { CompiledQuery, type Compilable, type Kysely, type QueryResult, type Transaction } from 'kysely';
import type { Db, Executor, Store } from './connect.ts';
import type { Database } from './database.ts';
import { dialectOf } from './dialect.ts';

const SENTINEL = /^\u0000arg(\d+)\u0000$/;

interface Template {
  sql: string;
  /** For each parameter: the index of the call argument it takes, or a constant from the query. */
  slots: (number | { value: unknown })[];
}

/**
 * Wraps a query builder so that it is compiled once. `build` must pass its arguments to the query
 * unchanged (as values compared or assigned), since they are replaced by markers to find their
 * places in the compiled parameters.
 */
/** Compiles `build` once with markers in place of its arguments, to find where each one goes. */
function compileTemplate<A extends readonly unknown[]>(args: A, compile: (markers: A) => { sql: string; parameters: readonly unknown[] }): Template {
  const markers = args.map((_, i) => `\u0000arg${i}\u0000`) as unknown as A;
  const compiled = compile(markers);
  return {
    sql: compiled.sql,
    slots: compiled.parameters.map((p) => {
      const m = typeof p === 'string' ? SENTINEL.exec(p) : null;
      return m ? Number(m[1]) : { value: p };
    }),
  };
}

function bind(template: Template, args: readonly unknown[]): unknown[] {
  return template.slots.map((slot) => (typeof slot === 'number' ? args[slot] : slot.value));
}

export function preparedRead<A extends readonly (string | number)[], R>(
  build: (db: Db, ...args: A) => Compilable<R>,
): (store: Store, ...args: A) => Promise<R | undefined> {
  const templates = new WeakMap<Store, Template>();
  return async (store, ...args) => {
    let template = templates.get(store);
    if (!template) {
      template = compileTemplate(args, (markers) => build(store.read, ...markers).compile());
      templates.set(store, template);
    }
    const parameters = bind(template, args);
    if (store.readRow) return store.readRow<R>(template.sql, parameters);
    const result = await store.read.executeQuery<R>(CompiledQuery.raw(template.sql, parameters));
    return result.rows[0];
  };
}

/**
 * The same for a statement run inside a transaction (an UPDATE per message on the dispatch and
 * receipt paths): compiled once per dialect, then only re-bound. Returns the driver's result
 * (`numAffectedRows`, `rows`).
 */
export function preparedWrite<A extends readonly (string | number | null)[]>(
  build: (db: Executor, ...args: A) => Compilable<unknown>,
): (db: Executor, ...args: A) => Promise<QueryResult<unknown>> {
  const templates = new Map<string, Template>();
  return (db, ...args) => {
    const template = templateFor(templates, dialectOf(db), db, args, build);
    return db.executeQuery(CompiledQuery.raw(template.sql, bind(template, args)));
  };
}

/** The template of `build` for a dialect, compiled at its first use there. */
function templateFor<A extends readonly unknown[]>(templates: Map<string, Template>, dialect: string, db: Executor, args: A, build: (db: Executor, ...args: A) => Compilable<unknown>): Template {
  let template = templates.get(dialect);
  if (!template) {
    template = compileTemplate(args, (markers) => build(db, ...markers).compile());
    templates.set(dialect, template);
  }
  return template;
}

/**
 * A read run inside a transaction of `store.db` once per item of a group (a verification's fraud
 * guard in the acceptance's transaction): compiled once per dialect, as `preparedWrite`; on SQLite
 * run on the writer's connection directly (`Store.writerRows`), synchronously, elsewhere through
 * `db`. `db` must be a transaction of `store.db`.
 */
export function preparedTransactionRead<A extends readonly (string | number | null)[], R>(
  build: (db: Executor, ...args: A) => Compilable<R>,
): (store: Store, db: Executor, ...args: A) => R[] | Promise<R[]> {
  const templates = new Map<string, Template>();
  return (store, db, ...args) => {
    const dialect = dialectOf(db);
    const template = templateFor(templates, dialect, db, args, build);
    const parameters = bind(template, args);
    if (store.writerRows && dialect === 'sqlite') return store.writerRows<R>(template.sql, parameters);
    return db.executeQuery<R>(CompiledQuery.raw(template.sql, parameters)).then((r) => r.rows);
  };
}
