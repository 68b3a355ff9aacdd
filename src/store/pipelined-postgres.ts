/**
 * PostgreSQL through node-postgres's pipeline mode: a transaction's BEGIN sent with its first
 * statement, statements that do not need each other's answers sent together (`inOneTrip`), and a
 * transaction's last statement sent with its COMMIT (`commitWith`).
 *
 * A round trip costs more than the network: its answer is read when the event loop next polls,
 * after whatever else the process is doing (under load, the parsing of dozens of requests), so a
 * transaction of five round trips waits five turns of a busy loop. In pipeline mode a connection
 * sends each query as soon as it is asked for, each with its own Sync (an error ends that query
 * alone, as without a pipeline), and the server runs them in order; so statements that do not
 * depend on each other's answers go out together and come back in one turn. Each still takes its
 * own snapshot when it starts (READ COMMITTED), so a read sent behind a lock sees what the lock's
 * last holder committed, exactly as it would have after waiting for the lock's answer.
 *
 * BEGIN is one such statement: nothing that follows needs its answer. It is sent without waiting,
 * and COMMIT waits for it. BEGIN fails only when the connection does, and then every statement
 * sent behind it fails too; none can run outside the transaction.
 */
import { CompiledQuery, type DatabaseConnection, type Dialect, type Driver, type QueryExecutor, type QueryResult, type TransactionSettings } from 'kysely';
import { savepointsOf } from './wrapped-driver.ts';

/** A connection of the pipelined driver. */
interface Piped extends DatabaseConnection {
  inner: DatabaseConnection;
  /** The BEGIN of its transaction, until the transaction ends. */
  begun: Promise<void> | null;
  /** Its transaction ended with its last statement (`commitWith`): nothing more may run in it. */
  ended: boolean;
}

function pipelinedDriver(inner: Driver): Driver {
  const connections = new WeakMap<DatabaseConnection, Piped>();
  const innerOf = (c: DatabaseConnection) => (c as Piped).inner;
  const driver: Driver = {
    init: () => inner.init(),
    async acquireConnection() {
      const connection = await inner.acquireConnection();
      let piped = connections.get(connection);
      if (!piped) {
        const p: Piped = {
          inner: connection,
          begun: null,
          ended: false,
          executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
            // It would run outside the transaction that the caller thinks it is in.
            if (p.ended) return Promise.reject(new Error('This transaction was committed with its last statement (commitWith); no statement may follow it.'));
            return connection.executeQuery<R>(query);
          },
          streamQuery: <R>(query: CompiledQuery, chunkSize?: number) => connection.streamQuery<R>(query, chunkSize),
        };
        connections.set(connection, (piped = p));
      }
      piped.ended = false;
      return piped;
    },
    async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings) {
      const piped = connection as Piped;
      piped.ended = false;
      const begun = inner.beginTransaction(innerOf(connection), settings);
      // Seen at COMMIT (and by the statements behind it, which fail with it); never unhandled.
      begun.catch(() => {});
      piped.begun = begun;
    },
    async commitTransaction(connection: DatabaseConnection) {
      const piped = connection as Piped;
      const begun = piped.begun;
      piped.begun = null;
      await begun;
      if (piped.ended) {
        piped.ended = false;
        return;
      }
      await inner.commitTransaction(innerOf(connection));
    },
    async rollbackTransaction(connection: DatabaseConnection) {
      const piped = connection as Piped;
      const begun = piped.begun;
      piped.begun = null;
      await begun?.catch(() => {});
      if (piped.ended) {
        piped.ended = false;
        return;
      }
      await inner.rollbackTransaction(innerOf(connection));
    },
    releaseConnection: (connection: DatabaseConnection) => inner.releaseConnection(innerOf(connection)),
    destroy: () => inner.destroy(),
  };
  return Object.assign(driver, savepointsOf(inner, innerOf));
}

/** `dialect` with the driver above; its pool must be made with `pipeline: true`. */
export function pipelined(dialect: Dialect): Dialect {
  return {
    createDriver: () => pipelinedDriver(dialect.createDriver()),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createAdapter: () => dialect.createAdapter(),
    createIntrospector: (db) => dialect.createIntrospector(db),
  };
}

type Executes = { getExecutor(): QueryExecutor };

/**
 * Runs `queries` on the executor's connection one after the other, sent together: on PostgreSQL
 * in one round trip. Each starts when the one before it has finished (and in READ COMMITTED takes
 * its snapshot then), as if each had waited for the answer before it; a failure inside a
 * transaction fails those behind it, and the first failure is what this throws.
 */
export async function inOneTrip(db: Executes, queries: readonly CompiledQuery[]): Promise<QueryResult<unknown>[]> {
  // Kysely sends a transaction's statements one at a time: asked for here in one go, on its
  // connection, they go out in the order asked.
  return db.getExecutor().provideConnection(async (connection) => {
    // Every answer read before the connection is free for another statement (or the pool).
    const settled = await Promise.allSettled(queries.map((q) => connection.executeQuery(q)));
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    return settled.map((s) => (s as PromiseFulfilledResult<QueryResult<unknown>>).value);
  });
}

/**
 * Runs `last` as the last statement of the transaction `trx` and commits with it, in one round trip
 * on PostgreSQL. If `last` fails, PostgreSQL answers the COMMIT behind it by rolling back; either
 * way the transaction has ended, and any further statement of its callback is refused. Only for a
 * statement whose success is all that decides the commit. Elsewhere (SQLite) it runs `last`, and the
 * transaction commits as usual when its callback returns; outside a transaction, it runs `last`.
 */
export async function commitWith<R>(trx: Executes, last: CompiledQuery<R>): Promise<QueryResult<R>> {
  return trx.getExecutor().provideConnection(async (connection) => {
    const piped = connection as Piped;
    // Outside a transaction the statement commits on its own.
    if (!('ended' in connection) || piped.begun === null) return connection.executeQuery<R>(last);
    const sent = Promise.allSettled([piped.inner.executeQuery<R>(last), piped.inner.executeQuery(CompiledQuery.raw('commit'))]);
    piped.ended = true;
    // Both answered before the connection can go back to the pool.
    const [result, committed] = await sent;
    if (result.status === 'rejected') throw result.reason;
    if (committed.status === 'rejected') throw committed.reason;
    return result.value;
  });
}
