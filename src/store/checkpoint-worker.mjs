// The background checkpointer of a SQLite file (see startBackgroundCheckpoints in connect.ts):
// copies the WAL back into the database from its own thread and connection, so the copying and
// its fsync never run inside a commit on the event loop. PASSIVE never blocks the writer or the
// readers; what it cannot copy yet (frames a reader still needs) it copies next time. Plain
// JavaScript for the reason given in read-worker.mjs. It is the one background loop that does not
// run on the worker loop (src/workers/worker-loop.ts): it lives on a thread of its own, where that
// TypeScript module is not loaded, and it claims nothing, so it has nothing to settle or back off;
// a checkpoint that cannot run now is simply tried at the next tick.
import { workerData } from 'node:worker_threads';
import Database from './sqlite-driver.mjs';

const db = new Database(workerData.path);
db.pragma('busy_timeout = 1000');
// This connection never writes rows; it must not checkpoint on its own account either.
db.pragma('wal_autocheckpoint = 0');
setInterval(() => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // Busy or locked: the next round tries again, and the writer's own threshold is the backstop.
  }
}, workerData.intervalMs);
