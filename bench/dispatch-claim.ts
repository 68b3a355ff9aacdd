/**
 * The cost of one dispatch claim (accounts in turn, jobs.repository.ts) with 100,000 messages of
 * one account and one each of five others (or of the number given) waiting, beside the oldest-first claim of another queue of
 * the same size: 20 claims of 100 each, three times. On PostgreSQL it needs TEST_DATABASE_URL (a
 * fresh schema of it is used and dropped).
 *
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --import tsx bench/dispatch-claim.ts [postgres|sqlite] [other accounts=5]
 */
import { sql } from 'kysely';
import { openTestStore } from '../test/helpers/test-store.ts';
import { claimJobs, enqueueJobs } from '../src/store/repositories/jobs.repository.ts';

const dialect = (process.argv[2] ?? 'postgres') as 'postgres' | 'sqlite';
const store = await openTestStore(dialect);
const NOW = 1_800_000_000_000;
for (let b = 0; b < 20; b++) {
  await enqueueJobs(store.db, Array.from({ length: 5000 }, (_, i) => ({ queue: 'dispatch' as const, accountId: 'acc_big', ref: `m${b}_${i}`, runAt: NOW - 100000 + b })), NOW - 100000);
}
for (let b = 0; b < 20; b++) {
  await enqueueJobs(store.db, Array.from({ length: 5000 }, (_, i) => ({ queue: 'receipt' as const, ref: `r${b}_${i}`, runAt: NOW - 100000 + b })), NOW - 100000);
}
const others = Number(process.argv[3] ?? 5);
if (others > 0) await enqueueJobs(store.db, Array.from({ length: others }, (_, i) => ({ queue: 'dispatch' as const, accountId: `acc_${i}`, ref: `s${i}`, runAt: NOW })), NOW);
if (dialect === 'postgres') await sql`analyze jobs`.execute(store.db);
for (let r = 0; r < 3; r++) {
  let t = performance.now();
  let n = 0;
  for (let i = 0; i < 20; i++) n += (await claimJobs(store.db, 'dispatch', 100, NOW + r, 30000)).length;
  console.log(`round robin: ${n} jobs in 20 claims, ${((performance.now() - t) / 20).toFixed(2)} ms per claim`);
  t = performance.now();
  n = 0;
  for (let i = 0; i < 20; i++) n += (await claimJobs(store.db, 'receipt', 100, NOW + r, 30000)).length;
  console.log(`oldest first (receipt queue, same size): ${n} jobs, ${((performance.now() - t) / 20).toFixed(2)} ms per claim`);
}
await store.close();
