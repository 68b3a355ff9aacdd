/**
 * Claims due jobs of one queue in batches and hands them to a handler, on the one worker loop
 * (worker-loop.ts). Jobs are rows (src/store/repositories/jobs.repository.ts), so any number of
 * these, in any number of processes, share the work; a wake-up from the same process skips the
 * idle wait.
 */
import type { Logger } from 'pino';
import { exponential, retryDelay, type RetryPolicy } from '../domain/retry-policy.ts';
import type { Store } from '../store/connect.ts';
import type { JobQueue, JobsTable } from '../store/database.ts';
import { claimJobs, releaseJobs } from '../store/repositories/jobs.repository.ts';
import type { Clock } from '../util/ids.ts';
import { WorkerLoop } from './worker-loop.ts';

export interface QueueWorkerOptions {
  store: Store;
  clock: Clock;
  log: Logger;
  queue: JobQueue;
  batchSize: number;
  /** How long a claim holds a job; past it, another worker may take the job. */
  leaseMs: number;
  /** Poll interval when the queue is empty (jobs due in the future, or from other processes). */
  idleMs: number;
  handle: (jobs: JobsTable[]) => Promise<void>;
}

/**
 * A batch whose handler failed is put back this much later, by failures in a row (1 s, doubling, at
 * most 30 s), rather than held until its lease ends.
 */
export const FAILED_BATCH_RELEASE: RetryPolicy = exponential({ baseMs: 1000, factor: 2, maxMs: 30_000 });

export class QueueWorker {
  readonly #loop: WorkerLoop;

  constructor(private readonly opts: QueueWorkerOptions) {
    this.#loop = new WorkerLoop({ name: opts.queue, log: opts.log, idleMs: opts.idleMs, step: (failures) => this.#step(failures) });
  }

  start(): void {
    this.#loop.start();
  }

  /** Skips the idle wait: new work was committed in this process. */
  wake(): void {
    this.#loop.wake();
  }

  /** Finishes the batch in hand, then stops. */
  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /** Processes whatever is due now, until the queue has nothing due (for tests and the CLI). */
  drain(): Promise<number> {
    return this.#loop.drain();
  }

  /** Claim a batch, run it; a failed batch is released for a later retry and the failure rethrown. */
  async #step(failures: number): Promise<{ done: number; more: boolean }> {
    const { store, clock, queue, batchSize, leaseMs, handle } = this.opts;
    const jobs = await claimJobs(store.db, queue, batchSize, clock(), leaseMs);
    if (jobs.length === 0) return { done: 0, more: false };
    try {
      await handle(jobs);
    } catch (err) {
      const delay = retryDelay(FAILED_BATCH_RELEASE, failures + 1)!;
      await releaseJobs(store.db, jobs.map((j) => j.id), clock() + delay).catch(() => {});
      throw err;
    }
    return { done: jobs.length, more: jobs.length >= batchSize };
  }
}
