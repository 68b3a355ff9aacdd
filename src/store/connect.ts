/**
 * Opens the database named by DATABASE_URL: embedded SQLite (better-sqlite3, WAL) or PostgreSQL.
 * Everything above this file sees one Kysely instance and the dialect name, recorded here once
 * (dialect.ts); the repositories whose SQL differs between the two ask `dialectOf`.
 */
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import SqliteDatabase from './sqlite-driver.mjs';
import { CompiledQuery, Kysely, sql, PostgresDialect, SqliteDialect, SqliteDriver, type Compilable, type DatabaseConnection, type Dialect, type Driver, type Transaction } from 'kysely';
import { ReadPool } from './read-pool.ts';
import { pipelined } from './pipelined-postgres.ts';
import { observedDriver, StoreCondition } from './condition.ts';
import type { Database } from './database.ts';
import { registerDialect, type DialectName } from './dialect.ts';

export type { DialectName } from './dialect.ts';
export type { StoreFailure, StoreProblem } from './condition.ts';
export type Db = Kysely<Database>;
/** The database or a transaction on it: what a repository function runs its queries on. */
export type Executor = Kysely<Database> | Transaction<Database>;

export interface Store {
  db: Db;
  dialect: DialectName;
  /**
   * For reads that need only committed data (authentication, Sender ID checks, reports). On a
   * SQLite file this is a second, read-only connection: readers then never queue behind the
   * writer's transactions, and never see a transaction that is still open. Elsewhere it is `db`.
   */
  read: Db;
  /**
   * Runs a prepared statement and returns its first row: on a SQLite file synchronously on the
   * read connection, on PostgreSQL as a named statement of the pool's connection (parsed and
   * planned once per connection, not at every run). Used through `preparedRead` for the lookups
   * every request makes.
   */
  readRow?: <R>(sql: string, parameters: readonly unknown[]) => R | undefined | Promise<R | undefined>;
  /**
   * SQLite file only: runs a compiled query on a reader thread (read-pool.ts), for reads heavy
   * enough to hold up the event loop. Use through `readRows`.
   */
  readAll?: <R>(query: CompiledQuery<R>) => Promise<R[]>;
  /**
   * SQLite only: runs a statement on the writer's connection, synchronously, and returns its rows.
   * Only inside a transaction of `db`, which holds that one connection: the statement is then part
   * of the transaction. For reads a group's transaction makes once per item (a verification's fraud
   * guard): Kysely's executor costs each statement a chain of promises and closures (about 4 KB and
   * a few µs), as much as the read itself. Use through `preparedTransactionRead`.
   */
  writerRows?: <R>(sql: string, parameters: readonly unknown[]) => R[];
  /**
   * SQLite file only, for long-running processes: checkpoint the WAL from a background thread
   * (checkpoint-worker.mjs) instead of inside the commits of the event loop.
   */
  startBackgroundCheckpoints?: () => void;
  /** Whether the database takes work now (unreachable server, full or read-only disk): condition.ts. */
  condition: StoreCondition;
  close(): Promise<void>;
}

/** Throws when the database cannot be reached (the readiness probe). */
export async function ping(store: Store): Promise<void> {
  await sql`select 1`.execute(store.db);
}

/** Runs a read-only query off the event loop where the store can (SQLite file), else on `read`. */
export async function readRows<R>(store: Store, query: Compilable<R> & { execute(): Promise<R[]> }): Promise<R[]> {
  return store.readAll ? store.readAll(query.compile()) : query.execute();
}

const require = createRequire(import.meta.url);

/** How many WAL pages the writer lets accumulate before it checkpoints inside a commit. */
const WRITER_CHECKPOINT_PAGES = 4000;

/** The PostgreSQL driver, loaded only by a process that uses PostgreSQL (it costs about 14 MiB). */
function loadPg(): typeof import('pg') {
  const pg = require('pg') as typeof import('pg');
  // int8 (bigint) columns hold millisecond timestamps and balances, all far below 2^53.
  pg.types.setTypeParser(20, (v: string) => Number(v));
  return pg;
}

/** How long a write waits for another process's write lock before it fails with SQLITE_BUSY. */
const BUSY_TIMEOUT_MS = 5000;

/**
 * Writes on SQLite wait for another process's write lock without blocking the event loop.
 *
 * SQLite's busy handler sleeps inside the call (1 ms, then 2, 5, 10 ms and more), and
 * better-sqlite3 is synchronous: with `serve`'s delivery process committing hundreds of times a
 * second, the API process spent much of a flood asleep in that handler, neither accepting nor
 * parsing. So a write transaction's BEGIN IMMEDIATE, and a write outside a transaction, are tried
 * with busy_timeout 0; while another process holds the lock the loop goes on with its other work,
 * and the write is tried again at the next turn of the loop for the first millisecond (locks are
 * usually held for less), then every millisecond, up to BUSY_TIMEOUT_MS. A write refused with
 * SQLITE_BUSY did nothing, so trying it again is safe. Reads never wait for a writer in WAL mode.
 *
 * A write transaction starts with BEGIN IMMEDIATE, taking the lock up front, so that it waits
 * here rather than failing with SQLITE_BUSY when a deferred transaction tries to upgrade from
 * read to write.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  readonly #raw: SqliteDatabase.Database | null;
  readonly #wait: { never: SqliteDatabase.Statement; usual: SqliteDatabase.Statement; statements: SqliteDatabase.Database } | null;
  #connection: DatabaseConnection | null = null;

  constructor(config: ConstructorParameters<typeof SqliteDriver>[0], raw: SqliteDatabase.Database | null, statements: SqliteDatabase.Database | null) {
    super(config);
    this.#raw = raw;
    this.#wait =
      raw && statements ? { never: raw.prepare('pragma busy_timeout = 0'), usual: raw.prepare(`pragma busy_timeout = ${BUSY_TIMEOUT_MS}`), statements } : null;
  }

  async #withoutBlocking<T>(attempt: () => Promise<T>): Promise<T> {
    const wait = this.#wait!;
    const started = performance.now();
    for (;;) {
      // No wait inside SQLite for this one statement only: while the loop waits below, every other
      // statement of the process (reads by readRow among them) keeps the usual busy_timeout.
      wait.never.get();
      try {
        return await attempt();
      } catch (err) {
        const waited = performance.now() - started;
        if ((err as { code?: string }).code !== 'SQLITE_BUSY' || waited >= BUSY_TIMEOUT_MS) throw err;
      } finally {
        wait.usual.get();
      }
      const waited = performance.now() - started;
      await new Promise((resolve) => (waited < 1 ? setImmediate(resolve) : setTimeout(resolve, 1)));
    }
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await super.acquireConnection();
    const raw = this.#raw;
    const wait = this.#wait;
    if (!raw || !wait) return connection;
    this.#connection ??= {
      executeQuery: <R>(query: CompiledQuery) =>
        raw.inTransaction || wait.statements.prepare(query.sql).reader
          ? connection.executeQuery<R>(query)
          : this.#withoutBlocking(() => connection.executeQuery<R>(query)),
      streamQuery: (query, chunkSize) => connection.streamQuery(query, chunkSize),
    };
    return this.#connection;
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

class ImmediateSqliteDialect extends SqliteDialect {
  readonly #config: ConstructorParameters<typeof SqliteDialect>[0];
  readonly #raw: SqliteDatabase.Database | null;
  readonly #statements: SqliteDatabase.Database | null;
  /** `raw` and its cached `statements`: writes wait for another process's lock without blocking. */
  constructor(config: ConstructorParameters<typeof SqliteDialect>[0], raw: SqliteDatabase.Database | null = null, statements: SqliteDatabase.Database | null = null) {
    super(config);
    this.#config = config;
    this.#raw = raw;
    this.#statements = statements;
  }
  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.#config, this.#raw, this.#statements);
  }
}

/**
 * Kysely prepares every statement anew; better-sqlite3 statements are reusable, and preparing is
 * a large part of a small query's cost. The set of distinct SQL texts is small and fixed by the
 * code (values are always parameters), so a bounded map suffices. Kysely needs only `prepare` and
 * `close` of the database object.
 */
function withStatementCache(db: SqliteDatabase.Database, max = 500): SqliteDatabase.Database {
  const cache = new Map<string, SqliteDatabase.Statement>();
  const cached = {
    prepare(sql: string) {
      let stmt = cache.get(sql);
      if (!stmt) {
        stmt = db.prepare(sql);
        if (cache.size >= max) cache.delete(cache.keys().next().value as string);
        cache.set(sql, stmt);
      }
      return stmt;
    },
    close() {
      db.close();
    },
  };
  return cached as unknown as SqliteDatabase.Database;
}

/**
 * What a statement's text starts with to run as a named statement on PostgreSQL (parsed and
 * planned once per connection, then only bound: `namedStatements`), wherever it runs,
 * transactions included. For statements whose text is fixed by the code (arrays as parameters,
 * never a list that grows with the rows) and that run often with a costly plan (the fraud guard's
 * read, a group's checks). SQLite reads it as a comment.
 */
export const NAMED_MARKER = '/* named */ ';

/** NAMED_MARKER for the start of a `sql` template. */
export const named = sql.raw(NAMED_MARKER);

/**
 * Statements whose text starts with NAMED_MARKER go to PostgreSQL as named statements of their
 * connection: parsed and planned once per connection, then only bound, inside transactions as out
 * of them. The names are the process's, one per text (the marked texts and `readRow`'s are fixed
 * by the code, so they are few). A schema change that alters a named statement's result columns (a
 * migration run by a newer process while this one runs) makes PostgreSQL refuse its next run
 * ("cached plan must not change result type"): the text then gets a new name, every connection
 * prepares it afresh, and only the run that met the change failed.
 */
function namedStatements(pool: import('pg').Pool): StatementNames {
  const byText = new Map<string, string>();
  let made = 0;
  const names: StatementNames = {
    of(text) {
      let name = byText.get(text);
      if (name === undefined) byText.set(text, (name = `pigeon_named_${++made}`));
      return name;
    },
    failed(text, err) {
      if ((err as { code?: string }).code === '0A000') byText.delete(text);
    },
  };
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (text: unknown, values?: unknown, callback?: unknown) => {
      if (typeof text !== 'string' || !text.startsWith(NAMED_MARKER) || !Array.isArray(values) || callback !== undefined) return query(text, values, callback);
      return (query({ name: names.of(text), text, values }) as Promise<unknown>).catch((err: unknown) => {
        names.failed(text, err);
        throw err;
      });
    };
  });
  return names;
}

/** The names of a pool's named statements, one per text (`namedStatements`, `readRow`). */
interface StatementNames {
  of(text: string): string;
  /** After a run of `text` failed: a new name next time if a schema change made its plan stale. */
  failed(text: string, err: unknown): void;
}

export function sqlitePath(databaseUrl: string): string {
  const path = databaseUrl.slice('sqlite:'.length);
  return path === ':memory:' ? path : resolve(path);
}

export interface StoreOptions {
  /** SQLite only: `full` syncs the WAL at every commit, `normal` (the default) only at checkpoints. */
  synchronous?: 'normal' | 'full';
}

export function openStore(databaseUrl: string, opts: StoreOptions = {}): Store {
  const store = open(databaseUrl, opts);
  registerDialect(store.db, store.dialect);
  registerDialect(store.read, store.dialect);
  return store;
}

/** `dialect` with its driver wrapped by `observedDriver`. */
function observed(dialect: Dialect, condition: StoreCondition, opts: Parameters<typeof observedDriver>[2]): Dialect {
  return {
    createDriver: () => observedDriver(dialect.createDriver(), condition, opts),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createAdapter: () => dialect.createAdapter(),
    createIntrospector: (db) => dialect.createIntrospector(db),
  };
}

/**
 * How long a query waits for a connection, whether the pool's ten are busy or the server does not
 * answer a connect: past it the query fails, and an API request answers 503 `service_unavailable`,
 * well before the client's own timeout, rather than hanging while PostgreSQL is away.
 */
const PG_CONNECT_TIMEOUT_MS = 10_000;

function open(databaseUrl: string, opts: StoreOptions): Store {
  if (databaseUrl.startsWith('sqlite:')) {
    const path = sqlitePath(databaseUrl);
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const condition = new StoreCondition(path === ':memory:' ? null : dirname(path));
    const raw = new SqliteDatabase(path);
    raw.pragma('journal_mode = WAL');
    // NORMAL in WAL mode: a commit survives a process crash; only an OS crash or power loss can
    // lose the last transactions. FULL syncs the WAL at every commit, so not even those. The
    // trade-off, and the cost measured, are in docs/deployment.md.
    raw.pragma(`synchronous = ${opts.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
    raw.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    raw.pragma('foreign_keys = ON');
    // A checkpoint ends with an fsync of the database file; checkpointing every 4,000 pages instead
    // of SQLite's 1,000 makes them four times rarer under load, and the WAL file is truncated back
    // to 64 MiB after each, so it does not stay large.
    raw.pragma(`wal_autocheckpoint = ${WRITER_CHECKPOINT_PAGES}`);
    // 32 MiB of page cache (the default is 2 MiB): the hot index pages of messages and jobs stay
    // in memory instead of being read again for every insert.
    raw.pragma('cache_size = -32768');
    raw.pragma('journal_size_limit = 67108864');
    const writerStatements = withStatementCache(raw);
    const db = new Kysely<Database>({
      dialect: observed(new ImmediateSqliteDialect({ database: writerStatements }, ...(path === ':memory:' ? [] : [raw, writerStatements])), condition, { recoveredBy: 'write', transactionOpen: () => raw.inTransaction }),
    });
    const writerRows = <R>(sql: string, parameters: readonly unknown[]): R[] => {
      try {
        return writerStatements.prepare(sql).all(...parameters) as R[];
      } catch (err) {
        condition.observe(err);
        throw err;
      }
    };
    if (path === ':memory:') return { db, dialect: 'sqlite', read: db, writerRows, condition, close: () => db.destroy() };
    const readerRaw = new SqliteDatabase(path, { readonly: true });
    readerRaw.pragma('busy_timeout = 5000');
    const reader = withStatementCache(readerRaw);
    const read = new Kysely<Database>({ dialect: new SqliteDialect({ database: reader }) });
    const pool = new ReadPool(path);
    let checkpointer: Worker | null = null;
    return {
      db,
      dialect: 'sqlite',
      read,
      condition,
      // Outside a transaction the writer's own connection reads only committed rows too, and its
      // page cache is warm; the read connection's cache is dropped at every commit of the writer.
      readRow: <R>(sql: string, parameters: readonly unknown[]) =>
        (raw.inTransaction ? reader : writerStatements).prepare(sql).get(...parameters) as R | undefined,
      readAll: (query) => pool.all(query),
      writerRows,
      startBackgroundCheckpoints() {
        if (checkpointer) return;
        checkpointer = new Worker(new URL('./checkpoint-worker.mjs', import.meta.url), {
          workerData: { path, intervalMs: 200 },
          // It allocates next to nothing: a JavaScript heap of a few MiB is plenty.
          resourceLimits: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 32 },
        });
        checkpointer.unref();
        checkpointer.on('error', () => {
          // Without the thread, the writer checkpoints as it did before.
          checkpointer = null;
          raw.pragma(`wal_autocheckpoint = ${WRITER_CHECKPOINT_PAGES}`);
        });
        // The checkpoints are now the thread's; the writer checkpoints only if the WAL outgrows
        // this backstop, as when the thread falls behind.
        raw.pragma('wal_autocheckpoint = 16000');
      },
      close: async () => {
        // Stopping mid-checkpoint is safe: a checkpoint is itself crash-safe.
        await checkpointer?.terminate();
        checkpointer = null;
        await pool.close();
        await db.destroy();
        await read.destroy();
        // Kysely closes a connection only if it was ever used; an open file keeps its disk busy.
        if (readerRaw.open) readerRaw.close();
        if (raw.open) raw.close();
      },
    };
  }
  const pg = loadPg();
  const condition = new StoreCondition();
  // Pipeline mode: a connection's queries go out as they are asked for (pipelined-postgres.ts).
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10, connectionTimeoutMillis: PG_CONNECT_TIMEOUT_MS, keepAlive: true, pipeline: true });
  // A server that restarts or fails over ends every connection. An idle client's error reaches the
  // pool, a client in use emits it on itself between queries; with no listener either would end
  // the process. The pool drops such a client (it is no longer queryable) and connects anew on
  // demand, so recording the failure is all there is to do.
  const lost = (err: Error) => void condition.observe(err);
  pool.on('error', lost);
  pool.on('connect', (client) => client.on('error', lost));
  const names = namedStatements(pool);
  const db = new Kysely<Database>({ dialect: pipelined(observed(new PostgresDialect({ pool }), condition, { recoveredBy: 'answer' })) });
  // Named as the marked statements are: `preparedRead` makes a fixed set of texts.
  const readRow = async <R>(text: string, parameters: readonly unknown[]): Promise<R | undefined> => {
    try {
      const result = await pool.query<R & import('pg').QueryResultRow>({ name: names.of(text), text, values: parameters as unknown[] });
      condition.answered(false);
      return result.rows[0];
    } catch (err) {
      names.failed(text, err);
      condition.observe(err);
      throw err;
    }
  };
  return { db, dialect: 'postgres', read: db, readRow, condition, close: () => db.destroy() };
}
