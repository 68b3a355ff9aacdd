/**
 * PostgreSQL through node-postgres's pipeline mode, with a transaction's BEGIN sent with its first
 * statement rather than one round trip ahead of it.
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
import { CompiledQuery, PostgresDialect, PostgresDriver, type DatabaseConnection, type Driver, type QueryExecutor, type QueryResult, type TransactionSettings } from 'kysely';

class PipelinedPostgresDriver extends PostgresDriver {
  /** Each connection's BEGIN, until its transaction ends. */
  readonly #begun = new WeakMap<DatabaseConnection, Promise<unknown>>();

  override async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    if (settings.isolationLevel || settings.accessMode) return super.beginTransaction(connection, settings);
    const begun = connection.executeQuery(CompiledQuery.raw('begin'));
    // Seen at COMMIT (or by the statements behind it, which fail with it); never unhandled.
    begun.catch(() => {});
    this.#begun.set(connection, begun);
  }

  override async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const begun = this.#begun.get(connection);
    this.#begun.delete(connection);
    await begun;
    await super.commitTransaction(connection);
  }

  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    this.#begun.delete(connection);
    await super.rollbackTransaction(connection);
  }
}

/** PostgresDialect with the driver above; the pool must be made with `pipeline: true`. */
export class PipelinedPostgresDialect extends PostgresDialect {
  readonly #config: ConstructorParameters<typeof PostgresDialect>[0];
  constructor(config: ConstructorParameters<typeof PostgresDialect>[0]) {
    super(config);
    this.#config = config;
  }
  override createDriver(): Driver {
    return new PipelinedPostgresDriver(this.#config);
  }
}

/**
 * Runs `queries` on the executor's connection one after the other, sent together: on PostgreSQL
 * in one round trip. Each starts when the one before it has finished (and in READ COMMITTED takes
 * its snapshot then), as if each had waited for the answer before it; a failure inside a
 * transaction fails those behind it, and the first failure is what this throws.
 */
export async function inOneTrip(db: { getExecutor(): QueryExecutor }, queries: readonly CompiledQuery[]): Promise<QueryResult<unknown>[]> {
  // Kysely sends a transaction's statements one at a time: asked for here in one go, on its
  // connection, they go out in the order asked.
  return db.getExecutor().provideConnection((connection) => Promise.all(queries.map((q) => connection.executeQuery(q))));
}
