import { openStore } from '../src/store/connect.ts';
import { claimJobs } from '../src/store/repositories/jobs.repository.ts';
const store = openStore('sqlite:/tmp/whprobe2.db');
import { migrateToLatest } from '../src/store/migrate.ts';
import { rmSync } from 'node:fs';
await migrateToLatest(store.db);
await store.db.deleteFrom('jobs').execute();
const now = Date.now();
const rows = []; for (let i = 0; i < 5000; i++) rows.push({ id: 'job_' + String(i).padStart(6, '0'), queue: 'webhook' as const, ref: 'e' + i, payload: null, run_at: now, attempts: 0, created_at: now });
for (let i = 0; i < rows.length; i += 1000) await store.db.insertInto('jobs').values(rows.slice(i, i + 1000)).execute();
for (let k = 0; k < 5; k++) { const t = performance.now(); const j = await claimJobs(store.db, 'sqlite', 'webhook', 128, now, 60000); console.log('claim', j.length, (performance.now() - t).toFixed(1), 'ms'); }
const raw = (store.db as any);
await store.close();
