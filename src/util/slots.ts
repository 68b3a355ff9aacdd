/**
 * A counting semaphore that bounds both the work in progress and the queue in front of it: at most
 * `concurrency` run, at most `maxWaiting` wait, and one more is refused at once with `busy()` (a
 * 503 with Retry-After, for the callers here), so that a burst of costly work (password hashes,
 * campaign files) neither runs all at once nor piles up without end. Its limits may be changed
 * while in use (tests make them small to reach the bound).
 */
export class Slots {
  #running = 0;
  readonly #waiting: { grant: () => void }[] = [];
  /** The most that ever ran at once and waited at once (for tests and metrics). */
  peakRunning = 0;
  peakWaiting = 0;

  constructor(
    public concurrency: number,
    public maxWaiting: number,
    private readonly busy: () => Error,
  ) {}

  get running(): number {
    return this.#running;
  }

  get waiting(): number {
    return this.#waiting.length;
  }

  /**
   * Resolves with the function that gives the slot back, once there is one. Throws `busy()` at once
   * when the queue is full, and the signal's reason when it is aborted while waiting.
   */
  async acquire(signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    if (this.#running < this.concurrency) {
      this.#running++;
    } else {
      if (this.#waiting.length >= this.maxWaiting) throw this.busy();
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          const at = this.#waiting.indexOf(entry);
          if (at >= 0) this.#waiting.splice(at, 1);
          reject(signal!.reason);
        };
        const entry = {
          grant: () => {
            signal?.removeEventListener('abort', onAbort);
            resolve();
          },
        };
        this.#waiting.push(entry);
        this.peakWaiting = Math.max(this.peakWaiting, this.#waiting.length);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    }
    this.peakRunning = Math.max(this.peakRunning, this.#running);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      // The slot passes straight to the next in line, so `running` never dips and rises again.
      const next = this.#waiting.shift();
      if (next) next.grant();
      else this.#running--;
    };
  }

  /** Runs `work` in a slot, given back however it ends. */
  async run<T>(work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const release = await this.acquire(signal);
    try {
      return await work();
    } finally {
      release();
    }
  }
}
