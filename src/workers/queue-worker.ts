/**
 * Claims due jobs of one queue in batches and hands them to a handler, on the one worker loop
 * (worker-loop.ts). Jobs are rows (src/store/repositories/jobs.repository.ts), so any number of
 * these, in any number of processes, share the work; a wake-up from the same process skips the
 * idle wait.
 */
import type { Logger } from 'pino';
import type { Store } from '../store/connect.ts';
import type { JobQueue, JobsTable } from '../store/database.ts';
import { claimJobs } from '../store/repositories/jobs.repository.ts';
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
  /** See WorkerLoopOptions.lingerMs. */
  lingerMs?: number;
  /** Called when a claim comes back full: there is a backlog (`loops` in workers.ts resumes the queue's other loops). */
  onFull?: () => void;
  handle: (jobs: JobsTable[], claimedAt: number) => Promise<void>;
  /**
   * Runs before each claim: finishes what an earlier batch left in hand (dispatch outcomes the
   * database could not take). A throw skips the claim and counts as a failed step.
   */
  beforeClaim?: () => Promise<void>;
  /**
   * Instead of a lease claim and `handle`: claims up to the batch size and handles the jobs in
   * one transaction, returning how many it claimed (work that is all in the database).
   */
  claimAndHandle?: (limit: number) => Promise<number>;
}

export class QueueWorker {
  readonly #loop: WorkerLoop;

  constructor(private readonly opts: QueueWorkerOptions) {
    this.#loop = new WorkerLoop({ name: opts.queue, log: opts.log, store: opts.store, idleMs: opts.idleMs, lingerMs: opts.lingerMs, step: () => this.#step() });
  }

  start(): void {
    this.#loop.start();
  }

  /** Skips the idle wait: new work was committed in this process. */
  wake(): void {
    this.#loop.wake();
  }

  /** Skips the idle wait at once, without the linger: a backlog is waiting. */
  resume(): void {
    this.#loop.resume();
  }

  /** Finishes the batch in hand, then stops. */
  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /** Processes whatever is due now, until the queue has nothing due (for tests and the CLI). */
  drain(): Promise<number> {
    return this.#loop.drain();
  }

  /**
   * Claim a batch and run it. If the handler fails, the claimed jobs stay leased and come back when
   * the lease ends (the receipts rely on a claim's start being its lease's end less the lease); the
   * loop backs off meanwhile.
   */
  async #step(): Promise<{ done: number; more: boolean }> {
    const { store, clock, queue, batchSize, leaseMs, handle, claimAndHandle, beforeClaim, onFull } = this.opts;
    await beforeClaim?.();
    if (claimAndHandle) {
      const done = await claimAndHandle(batchSize);
      if (done >= batchSize) onFull?.();
      return { done, more: done >= batchSize };
    }
    const claimedAt = clock();
    const jobs = await claimJobs(store.db, queue, batchSize, claimedAt, leaseMs);
    if (jobs.length === 0) return { done: 0, more: false };
    // Before the batch is handled: the others take their share meanwhile.
    if (jobs.length >= batchSize) onFull?.();
    await handle(jobs, claimedAt);
    return { done: jobs.length, more: jobs.length >= batchSize };
  }
}
