/**
 * PostgreSQL breaks a deadlock by aborting one of its transactions (SQLSTATE 40P01), and aborts one
 * that cannot be serialised (40001). Nothing of the aborted transaction was written, so the work
 * is run again, a few times, after a short random pause that keeps the two from meeting again in
 * step. Any other error, or the same one too often, goes to the caller. SQLite raises neither: its
 * writers wait their turn.
 */
const ATTEMPTS = 4;

export function isTransactionConflict(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  return code === '40P01' || code === '40001';
}

/** Runs `work` (which opens its own transaction), again while PostgreSQL aborts it as a deadlock or serialisation victim. */
export async function retryingConflicts<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (attempt >= ATTEMPTS || !isTransactionConflict(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5 * attempt + Math.random() * 20));
    }
  }
}
