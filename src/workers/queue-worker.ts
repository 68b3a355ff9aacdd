/**
 * A loop that claims due jobs of one queue in batches and hands them to a handler. Jobs are rows
 * (src/store/repositories/jobs.repository.ts), so any number of these loops, in any number of
 * processes, share the work; a wake-up from the same process skips the idle wait.
 */
import type { Logger } from 'pino';
import type { Store } from '../store/connect.ts';
import type { JobQueue, JobsTable } from '../store/database.ts';
import { claimJobs, releaseJobs } from '../store/repositories/jobs.repository.ts';
import type { Clock } from '../util/ids.ts';

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

export class QueueWorker {
  #running = false;
  #loop: Promise<void> | null = null;
  #wake: (() => void) | null = null;
  #woken = false;
  #claimed: string[] = [];

  constructor(private readonly opts: QueueWorkerOptions) {}

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#loop = this.#run();
  }

  /** Skips the idle wait: new work was committed in this process. */
  wake(): void {
    this.#woken = true;
    this.#wake?.();
  }

  /** Finishes the batch in hand, then stops. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#wake?.();
    await this.#loop;
  }

  /** Processes whatever is due now, until the queue has nothing due (for tests and the CLI). */
  async drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.#once();
      total += n;
      if (n === 0) return total;
    }
  }

  async #once(): Promise<number> {
    const { store, clock, queue, batchSize, leaseMs, handle } = this.opts;
    const jobs = await claimJobs(store.db, store.dialect, queue, batchSize, clock(), leaseMs);
    if (jobs.length === 0) return 0;
    this.#claimed = jobs.map((j) => j.id);
    try {
      await handle(jobs);
    } finally {
      this.#claimed = [];
    }
    return jobs.length;
  }

  async #run(): Promise<void> {
    const { log, queue, batchSize, idleMs } = this.opts;
    let failures = 0;
    while (this.#running) {
      this.#woken = false;
      let n = 0;
      try {
        n = await this.#once();
        failures = 0;
      } catch (err) {
        failures++;
        // The claimed jobs stay leased and come back when the lease ends; back off meanwhile.
        log.error({ err, queue }, 'job batch failed');
        if (this.#claimed.length > 0) {
          await releaseJobs(this.opts.store.db, this.#claimed, this.opts.clock() + Math.min(30_000, 500 * 2 ** failures)).catch(() => {});
          this.#claimed = [];
        }
        await this.#sleep(Math.min(5000, 100 * 2 ** failures));
        continue;
      }
      if (n < batchSize && !this.#woken) await this.#sleep(idleMs);
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const self = this;
      function done() {
        clearTimeout(timer);
        self.#wake = null;
        resolve();
      }
      this.#wake = done;
    });
  }
}
