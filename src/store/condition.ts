/**
 * Whether the database can take work right now, as its own queries show it: PostgreSQL refusing
 * or dropping connections (a restart, a failover), a SQLite file whose disk is full or whose
 * folder turned read-only. Every query of the store passes through `observedDriver`, which
 * records such a failure here and clears it at the next query that proves it over (any answer
 * from PostgreSQL; a committed write on SQLite, since reads go on working on a full disk).
 * Callers ask `failureOf(err)` whether an error is one of these (to answer 503 rather than 500),
 * and `problem` whether one stands now (the readiness probe, the log).
 */
import { closeSync, fsyncSync, openSync, rmSync, statfsSync, writeSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { CompiledQuery, DatabaseConnection, Driver, QueryResult, TransactionSettings } from 'kysely';
import { savepointsOf } from './wrapped-driver.ts';

/**
 * What stops the store: the server unreachable, a PostgreSQL standby that refuses writes (the
 * address leads to a replica not yet promoted, in the middle of a failover), or a local disk that
 * is full or read-only.
 */
export type StoreFailure = 'unreachable' | 'standby' | 'full' | 'read_only';

export interface StoreProblem {
  failure: StoreFailure;
  /** The driver's own words, for the log and `/ready`. */
  detail: string;
  since: number;
}

/** PostgreSQL's SQLSTATEs of a server going away or not taking connections (class 08, 57P0x). */
const PG_GONE = /^(08...|57P0[123]|53300)$/;
/** Socket-level failures of a connection to the server. */
const NET_GONE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND']);
/** What node-postgres says, without a code, when its connection ended or could not be made in time. */
const PG_CLIENT_GONE = /^(Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect|Client was closed and is not queryable)/;

/** Bytes free on the data folder's file system below which a SQLite I/O error is taken for a full disk. */
const NEARLY_FULL_BYTES = 1024 * 1024;
/** What `probe` writes: a few pages of WAL, about what a small commit needs. */
const PROBE_BYTES = 256 * 1024;

export class StoreCondition {
  #recoveredAt: number | null = null;
  #problem: StoreProblem | null = null;
  #disk: { at: number; failure: StoreFailure | null } = { at: 0, failure: null };
  readonly #listeners: ((problem: StoreProblem | null) => void)[] = [];

  /** @param folder the SQLite file's folder, to tell a full or read-only disk from another I/O error. */
  constructor(private readonly folder: string | null = null) {}

  get problem(): StoreProblem | null {
    return this.#problem;
  }

  /** Called with the new problem when one starts or changes kind, and with null when it ends. */
  onChange(listener: (problem: StoreProblem | null) => void): void {
    this.#listeners.push(listener);
  }

  /** Which failure `err` is, or null for any other error (a bug, a constraint, a bad query). */
  failureOf(err: unknown): StoreFailure | null {
    for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
      const failure = this.#classify(e as { code?: unknown; message?: unknown; errors?: unknown });
      if (failure) return failure;
    }
    return null;
  }

  #classify(e: { code?: unknown; message?: unknown; errors?: unknown }): StoreFailure | null {
    const code = typeof e.code === 'string' ? e.code : '';
    if (code === 'SQLITE_FULL' || code === 'ENOSPC') return 'full';
    if (code.startsWith('SQLITE_READONLY') || code === 'EROFS') return 'read_only';
    if (code.startsWith('SQLITE_IOERR') || code === 'SQLITE_CANTOPEN') return this.#diskState();
    if (PG_GONE.test(code) || NET_GONE.has(code)) return 'unreachable';
    // read_only_sql_transaction: what a hot standby answers every write.
    if (code === '25006') return 'standby';
    if (typeof e.message === 'string' && PG_CLIENT_GONE.test(e.message)) return 'unreachable';
    // A connection to a name with several addresses fails with all of their errors.
    if (Array.isArray(e.errors) && e.errors.length > 0 && e.errors.every((x) => this.failureOf(x) === 'unreachable')) return 'unreachable';
    return null;
  }

  /**
   * SQLite reports a write the file system refused as an I/O error, whatever the reason (and a
   * file system the kernel made read-only after an error may still look writable to access()):
   * writing a small file beside the database says which, EROFS or ENOSPC. A write that works, with
   * space left, means a failing disk, not a state to wait out, which stays a 500. Checked at most
   * once a second: every request of an outage asks.
   */
  #diskState(): StoreFailure | null {
    if (!this.folder) return null;
    const now = Date.now();
    if (now - this.#disk.at < 1000) return this.#disk.failure;
    this.#disk = { at: now, failure: writeProbeSync(this.folder) };
    return this.#disk.failure;
  }

  /** Records `err` if it is a failure of the store; returns its kind. */
  observe(err: unknown, now = Date.now()): StoreFailure | null {
    const failure = this.failureOf(err);
    if (!failure) return null;
    if (this.#problem?.failure !== failure) {
      this.#problem = { failure, detail: err instanceof Error ? err.message : String(err), since: now };
      for (const l of this.#listeners) l(this.#problem);
    }
    return failure;
  }

  /**
   * While a full or read-only disk stands, writes and syncs a small file beside the database and
   * ends the problem if that works: a server taken out of service by its readiness probe gets no
   * writes that could show the disk has room again.
   */
  async probe(): Promise<void> {
    if (!this.folder || !this.#problem || this.#problem.failure === 'unreachable') return;
    const file = join(this.folder, `.pigeon-write-probe-${process.pid}`);
    try {
      const handle = await open(file, 'w');
      try {
        await handle.write(Buffer.alloc(PROBE_BYTES));
        await handle.sync();
      } finally {
        await handle.close();
      }
      this.recovered();
    } catch {
      // Still full or read-only: the problem stands.
    } finally {
      await rm(file, { force: true }).catch(() => {});
    }
  }

  /**
   * The server answered (PostgreSQL): it is reachable again, which ends every problem but a
   * standby's, whose reads always worked; only a write shows the address leads to a primary.
   */
  answered(wrote: boolean): void {
    if (this.#problem?.failure === 'standby' && !wrote) return;
    this.recovered();
  }

  /** When the last problem ended (Date.now()), or null if none has. */
  get recoveredAt(): number | null {
    return this.#recoveredAt;
  }

  /** The store took work again. */
  recovered(): void {
    if (!this.#problem) return;
    this.#problem = null;
    this.#recoveredAt = Date.now();
    for (const l of this.#listeners) l(null);
  }
}

/** What writing a small file in `folder` says of its file system: full, read-only, or neither. */
function writeProbeSync(folder: string): StoreFailure | null {
  const file = join(folder, `.pigeon-write-probe-${process.pid}`);
  try {
    const fd = openSync(file, 'w');
    try {
      writeSync(fd, Buffer.alloc(4096));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    const fs = statfsSync(folder);
    return fs.bavail * fs.bsize < NEARLY_FULL_BYTES ? 'full' : null;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'EROFS' ? 'read_only' : code === 'ENOSPC' || code === 'EDQUOT' ? 'full' : null;
  } finally {
    try {
      rmSync(file, { force: true });
    } catch {
      // A read-only folder: nothing was created.
    }
  }
}

/** The store's side of a connection: whether a transaction is open and has written. */
interface Observed extends DatabaseConnection {
  readonly inner: DatabaseConnection;
  transaction: { wrote: boolean } | null;
}

/**
 * Wraps a Kysely driver so that every failure of the store is recorded in `condition`, and the
 * first query that proves it over ends it. `recoveredBy`: `answer` (PostgreSQL: any answer means
 * the server is back) or `write` (SQLite: only a committed change shows the disk takes writes).
 * With `rollbackOnlyIfOpen`, a rollback after SQLite already rolled back by itself (it does on
 * SQLITE_FULL and on some I/O errors) is skipped, so the caller sees the error that caused it
 * rather than "no transaction is active".
 */
export function observedDriver(
  inner: Driver,
  condition: StoreCondition,
  opts: { recoveredBy: 'answer' | 'write'; transactionOpen?: () => boolean },
): Driver {
  // A driver may throw before it returns a promise (Kysely's SQLite driver runs the statement
  // synchronously): both ways are caught.
  const observe = async <T>(run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (err) {
      condition.observe(err);
      throw err;
    }
  };
  const innerOf = (c: DatabaseConnection) => (c as Observed).inner;
  const wrap = (connection: DatabaseConnection): Observed => {
    const observed: Observed = {
      inner: connection,
      transaction: null,
      async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
        const result = await observe(() => connection.executeQuery<R>(query));
        const wrote = result.numAffectedRows !== undefined && result.numAffectedRows > 0n;
        if (wrote && observed.transaction) observed.transaction.wrote = true;
        if (opts.recoveredBy === 'answer') condition.answered(wrote);
        else if (wrote && !observed.transaction) condition.recovered();
        return result;
      },
      streamQuery: <R>(query: CompiledQuery, chunkSize?: number) => connection.streamQuery<R>(query, chunkSize),
    };
    return observed;
  };
  const connections = new WeakMap<DatabaseConnection, Observed>();
  const driver: Driver = {
    init: () => inner.init(),
    async acquireConnection() {
      const connection = await observe(() => inner.acquireConnection());
      let observed = connections.get(connection);
      if (!observed) {
        observed = wrap(connection);
        connections.set(connection, observed);
      }
      return observed;
    },
    async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings) {
      await observe(() => inner.beginTransaction(innerOf(connection), settings));
      (connection as Observed).transaction = { wrote: false };
    },
    async commitTransaction(connection: DatabaseConnection) {
      const transaction = (connection as Observed).transaction;
      await observe(() => inner.commitTransaction(innerOf(connection)));
      (connection as Observed).transaction = null;
      if (opts.recoveredBy === 'answer') condition.answered(transaction?.wrote === true);
      else if (transaction?.wrote) condition.recovered();
    },
    async rollbackTransaction(connection: DatabaseConnection) {
      (connection as Observed).transaction = null;
      if (opts.transactionOpen && !opts.transactionOpen()) return;
      await observe(() => inner.rollbackTransaction(innerOf(connection)));
    },
    releaseConnection: (connection: DatabaseConnection) => inner.releaseConnection(innerOf(connection)),
    destroy: () => inner.destroy(),
  };
  return Object.assign(driver, savepointsOf(inner, innerOf));
}
