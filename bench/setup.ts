/** A SQLite or PostgreSQL store with one customer ready to send, for the benchmarks. */
import { createAccount } from '../src/services/accounts/accounts.ts';
import { createApiKey } from '../src/services/keys/api-keys.ts';
import { approveSenderId, registerSenderId } from '../src/services/sender-ids/sender-ids.ts';
import { openStore } from '../src/store/connect.ts';
import { migrateToLatest } from '../src/store/migrate.ts';
import { serviceContext } from '../test/helpers/test-store.ts';
import { freePort, startPigeon, type PigeonProcess } from '../test/helpers/processes.ts';

export async function prepareCustomer(databaseUrl: string, credits = 100_000_000): Promise<{ accountId: string; key: string }> {
  const store = openStore(databaseUrl);
  await migrateToLatest(store.db);
  const ctx = serviceContext(store, { DATABASE_URL: databaseUrl });
  const account = await createAccount(ctx, { name: 'Bench', email: 'bench@example.com', credits });
  const key = await createApiKey(ctx, account.id, { label: 'bench' });
  await approveSenderId(ctx, (await registerSenderId(ctx, account.id, 'Bench')).id);
  await store.close();
  return { accountId: account.id, key: key.key };
}

/** A new empty database: a SQLite file in `dir`, or a fresh schema of the local PostgreSQL test database. */
export async function freshDatabase(kind: string, dir: string, name = 'bench'): Promise<string> {
  if (kind !== 'postgres') return `sqlite:${dir}/${name}.db`;
  const pg = (await import('pg')).default;
  const base = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const client = new pg.Client({ connectionString: base });
  await client.connect();
  await client.query(`drop schema if exists ${name} cascade; create schema ${name}`);
  await client.end();
  return `${base}?options=${encodeURIComponent(`-c search_path=${name}`)}`;
}

/**
 * On PostgreSQL, vacuums and analyzes the tables of the bench's schema, as autovacuum would have
 * between two runs in production: without it (a machine whose PostgreSQL runs with autovacuum
 * off) a table updated run after run keeps every dead row and its planner figures from when it was
 * empty, and the later runs measure that. Nothing on SQLite.
 */
export async function settleDatabase(databaseUrl: string): Promise<void> {
  if (!databaseUrl.startsWith('postgres')) return;
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ tablename: string }>('select tablename from pg_tables where schemaname = current_schema()');
    if (rows.length > 0) await client.query(`vacuum analyze ${rows.map((r) => `"${r.tablename}"`).join(', ')}`);
  } finally {
    await client.end();
  }
}

/**
 * `pigeon serve --no-workers` on `databaseUrl` at a free port of 127.0.0.1, unthrottled: no rate
 * limit, and a dispatch backlog limit nothing reaches (without workers nothing drains the queue,
 * and the limit must not turn sends into 503s). `env` adds settings.
 */
export async function serveAcceptance(databaseUrl: string, env: Record<string, string> = {}): Promise<{ server: PigeonProcess; base: string }> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = await startPigeon(['serve', '--no-workers'], {
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    PUBLIC_URL: base,
    SMPP_SERVER_PORT: '0',
    RATE_LIMIT_MAX: '100000000',
    DISPATCH_BACKLOG_LIMIT: '100000000',
    ...env,
  });
  return { server, base };
}
