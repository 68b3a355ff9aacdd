// A reader thread of the SQLite read pool (read-pool.ts): its own read-only connection, running
// SQL compiled by Kysely on the main thread. Plain JavaScript because a worker thread does not
// inherit the TypeScript loader that bin/pigeon registers for the main thread.
import { parentPort, workerData } from 'node:worker_threads';
import Database from './sqlite-driver.mjs';

const db = new Database(workerData.path, { readonly: true });
db.pragma('busy_timeout = 5000');
// 8 MiB of page cache: the pages of the report indexes being read; the OS caches the rest.
db.pragma('cache_size = -8192');
const statements = new Map();

parentPort.on('message', ({ id, sql, parameters }) => {
  try {
    let statement = statements.get(sql);
    if (!statement) {
      statement = db.prepare(sql);
      if (statements.size >= 200) statements.delete(statements.keys().next().value);
      statements.set(sql, statement);
    }
    parentPort.postMessage({ id, rows: statement.all(...parameters) });
  } catch (error) {
    parentPort.postMessage({ id, error: { message: error.message, code: error.code } });
  }
});
