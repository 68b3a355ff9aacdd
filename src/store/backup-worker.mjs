// Copies a live SQLite database to a new file on a thread of its own (sqlite-files.ts), so that a
// scheduled backup inside `pigeon serve` never holds up the event loop: the copy, the check of the
// copy and its fsync all run here. The copy is one step of SQLite's online backup: one read
// transaction, so the copy is the database as of one commit. In WAL mode the writer goes on
// meanwhile; only the checkpoints cannot pass that snapshot, so the WAL grows by what is written
// during the copy and is truncated after it. A backup made in many small steps would start again
// whenever the server commits, that is, never finish under load.
// Plain JavaScript for the reason given in read-worker.mjs.
import { closeSync, fsyncSync, openSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import Database from './sqlite-driver.mjs';

const { source, target, check } = workerData;
try {
  const started = Date.now();
  const db = new Database(source, { readonly: true, fileMustExist: true });
  db.pragma('busy_timeout = 5000');
  try {
    // The first transfer only starts the backup; the next one, of every page, copies it all.
    await db.backup(target, { progress: () => 0x7fffffff });
  } finally {
    db.close();
  }
  const copiedMs = Date.now() - started;
  let problems = [];
  if (check) {
    const copy = new Database(target, { fileMustExist: true });
    try {
      // One file on its own, openable where it is copied to, with no WAL beside it.
      copy.pragma('journal_mode = DELETE');
      problems = copy.pragma('quick_check(20)').map((r) => r.quick_check);
    } finally {
      copy.close();
    }
  }
  const fd = openSync(target, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  parentPort.postMessage({ ok: true, copiedMs, problems });
} catch (err) {
  parentPort.postMessage({ ok: false, message: err?.message ?? String(err), code: err?.code ?? null });
}
