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
await enqueueJobs(store.db, Array.from({ length: 5 }, (_, i) => ({ queue: 'dispatch' as const, accountId: `acc_${i}`, ref: `s${i}`, runAt: NOW })), NOW);
if (dialect === 'postgres') await sql`analyze jobs`.execute(store.db);
for (let r = 0; r < 3; r++) {
  let t = performance.now();
  let n = 0;
  for (let i = 0; i < 20; i++) n += (await claimJobs(store.db, dialect, 'dispatch', 100, NOW + r, 30000)).length;
  console.log(`round robin: ${n} jobs in 20 claims, ${((performance.now() - t) / 20).toFixed(2)} ms per claim`);
  t = performance.now();
  n = 0;
  for (let i = 0; i < 20; i++) n += (await claimJobs(store.db, dialect, 'receipt', 100, NOW + r, 30000)).length;
  console.log(`oldest first (receipt queue, same size): ${n} jobs, ${((performance.now() - t) / 20).toFixed(2)} ms per claim`);
}
await store.close();
