/**
 * Where PostgreSQL's own time goes, as PostgreSQL reports it: runs one benchmark script against a
 * PostgreSQL server that loads `pg_stat_statements` (with `pg_stat_statements.track = all`, so the
 * statements inside `pigeon_accept` are listed too), then prints the statements that took the
 * most execution time, with their calls, mean time and rows.
 *
 * A default install does not preload the extension, and loading it needs a restart, so this is
 * meant for a second, throw-away cluster on another local port, e.g. with Debian's tools:
 *
 *   pg_createcluster 15 stat --port 5433
 *   printf "listen_addresses = '127.0.0.1'\nshared_preload_libraries = 'pg_stat_statements'\npg_stat_statements.track = all\n" \
 *     >> /etc/postgresql/15/stat/postgresql.conf
 *   pg_ctlcluster 15 stat start && createdb -h 127.0.0.1 -p 5433 -U postgres test
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5433/test \
 *     node --import tsx bench/pg-statements.ts bench/http.bench.ts 20 postgres
 *
 * The benchmark's own figures are printed as it prints them (its last line is its JSON).
 */
import { spawn } from 'node:child_process';
import pg from 'pg';

const url = process.env.BENCH_DATABASE_URL;
const [script, ...args] = process.argv.slice(2);
if (!url || !script) {
  console.error('usage: BENCH_DATABASE_URL=postgres://… node --import tsx bench/pg-statements.ts BENCH_SCRIPT [ARGS…]');
  process.exit(2);
}

const client = new pg.Client({ connectionString: url });
await client.connect();
try {
  await client.query('create extension if not exists pg_stat_statements');
  await client.query('select pg_stat_statements_reset()');
} catch (e) {
  console.error(`# ${url} does not load pg_stat_statements (shared_preload_libraries): ${(e as Error).message}`);
  process.exit(1);
}
const code = await new Promise<number | null>((resolve) => {
  spawn(process.execPath, ['--import', 'tsx', script, ...args], { stdio: 'inherit', env: process.env }).on('exit', resolve);
});
const { rows } = await client.query<{ calls: string; total: number; mean: number; rows: string; top: boolean; query: string }>(
  `select calls, total_exec_time as total, mean_exec_time as mean, rows, toplevel as top, query
     from pg_stat_statements
    where query not like '%pg_stat_statements%'
    order by total_exec_time desc limit 15`,
);
await client.end();
// Nested statements' time is also in the function's that ran them: shares are of the top level's.
const all = rows.filter((r) => r.top).reduce((n, r) => n + r.total, 0);
console.log(`\n# pg_stat_statements after ${script} ${args.join(' ')} (nested = inside a function)`);
console.log(`${'calls'.padStart(8)} ${'total ms'.padStart(10)} ${'share'.padStart(6)} ${'mean ms'.padStart(8)} ${'rows'.padStart(9)}  statement`);
for (const r of rows) {
  const text = (r.top ? '' : '[nested] ') + r.query.replace(/\s+/g, ' ').slice(0, 100);
  console.log(
    `${r.calls.padStart(8)} ${r.total.toFixed(0).padStart(10)} ${`${((r.total / all) * 100).toFixed(1)}%`.padStart(6)} ${r.mean.toFixed(3).padStart(8)} ${r.rows.padStart(9)}  ${text}`,
  );
}
process.exit(code ?? 1);
