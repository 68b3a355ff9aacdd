/**
 * A submits-per-second cap. The bucket holds a tenth of a second's worth (at least one), so a cap
 * is kept over any window of a few hundred milliseconds rather than allowing a one-second burst.
 */
export class TokenBucket {
  #tokens: number;
  #updatedAt = 0;
  readonly #capacity: number;

  /** `capacity`: the burst, when a caller needs more than a tenth of a second's worth. */
  constructor(
    private readonly perSecond: number,
    capacity: number = Math.max(1, Math.ceil(perSecond / 10)),
  ) {
    this.#capacity = capacity;
    this.#tokens = this.#capacity;
  }

  #refill(now: number): void {
    if (this.#updatedAt === 0) this.#updatedAt = now;
    this.#tokens = Math.min(this.#capacity, this.#tokens + ((now - this.#updatedAt) * this.perSecond) / 1000);
    this.#updatedAt = now;
  }

  /** Takes one token if there is one. */
  take(now: number): boolean {
    this.#refill(now);
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  /** Milliseconds until a token is available. */
  waitMs(now: number): number {
    this.#refill(now);
    return this.#tokens >= 1 ? 0 : Math.ceil(((1 - this.#tokens) * 1000) / this.perSecond);
  }
}
