/**
 * When to try again after a failure, and when to give up: the one retry policy every worker uses
 * (webhook attempts, mail, a failed batch of jobs, a backlog put back). Pure: the random source is
 * passed in, so a policy with jitter is tested without chance.
 *
 * Two shapes:
 * - a schedule, `delaysMs[i]` being the wait before attempt i+1 counted from attempt i (the first
 *   entry is the wait before the first attempt); after the last attempt, give up. The webhook
 *   schedule of DECISIONS.md §4 (`WEBHOOK_RETRY_DELAYS_MS`, `0,30000,300000`) is one, exact.
 * - exponential: `baseMs` after the first failure, `factor` times more after each next one, at
 *   most `maxMs`; giving up after `maxAttempts` attempts when that is set.
 *
 * `jitter` (0 to 1, default 0) spreads each wait over ±jitter of it, so that many retries due
 * together do not come back together.
 */
export type RetryPolicy =
  | { kind: 'schedule'; delaysMs: readonly number[]; jitter?: number }
  | { kind: 'exponential'; baseMs: number; factor: number; maxMs: number; maxAttempts?: number; jitter?: number };

/** A schedule of exact waits: `delaysMs[i]` before attempt i+1 (DECISIONS.md §4's shape). */
export function schedule(delaysMs: readonly number[], jitter = 0): RetryPolicy {
  return { kind: 'schedule', delaysMs, jitter };
}

export function exponential(opts: { baseMs: number; factor: number; maxMs: number; maxAttempts?: number; jitter?: number }): RetryPolicy {
  return { kind: 'exponential', ...opts };
}

/**
 * The wait before the next attempt once `made` attempts (1-based) have failed, in milliseconds, or
 * null when the policy gives up. `random` returns a number in [0, 1).
 */
export function retryDelay(policy: RetryPolicy, made: number, random: () => number = Math.random): number | null {
  if (!Number.isInteger(made) || made < 1) throw new RangeError(`attempts made must be a positive integer, not ${made}`);
  let delay: number;
  if (policy.kind === 'schedule') {
    if (made >= policy.delaysMs.length) return null;
    delay = policy.delaysMs[made]!;
  } else {
    if (policy.maxAttempts !== undefined && made >= policy.maxAttempts) return null;
    // Past the cap the power only grows; stop computing it there (and never reach Infinity).
    delay = policy.baseMs;
    for (let i = 1; i < made && delay < policy.maxMs; i++) delay *= policy.factor;
    delay = Math.min(policy.maxMs, delay);
  }
  return withJitter(delay, policy.jitter ?? 0, random);
}

/** Whether the policy gives up once `made` attempts have failed. */
export function givesUp(policy: RetryPolicy, made: number): boolean {
  return retryDelay(policy, made, () => 0.5) === null;
}

function withJitter(delay: number, jitter: number, random: () => number): number {
  if (jitter <= 0 || delay === 0) return delay;
  const spread = Math.min(1, jitter);
  return Math.round(delay * (1 - spread + random() * 2 * spread));
}
