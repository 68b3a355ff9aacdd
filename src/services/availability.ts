/**
 * What the rest of Pigeon makes of a store that cannot take work (src/store/condition.ts): the
 * catalogued, retryable answer for the client, and the log lines for the operator.
 */
import type { Logger } from 'pino';
import { AppError } from '../errors/catalogue.ts';
import type { Store, StoreFailure, StoreProblem } from '../store/connect.ts';

/** PostgreSQL restarts or fails over in seconds (a standby is promoted in seconds too). */
const UNREACHABLE_RETRY_AFTER_S = 5;
/** A full or read-only disk waits for the operator. */
const STORAGE_RETRY_AFTER_S = 30;

const EXPLAIN: Record<StoreFailure, string> = {
  unreachable: 'the database is unreachable',
  standby: 'the database is a standby that refuses writes (a failover under way?)',
  full: 'the disk of the database is full',
  read_only: 'the folder of the database is read-only',
};

/**
 * The answer for an error that comes from the store being unavailable: 503 `service_unavailable`
 * (PostgreSQL unreachable) or `storage_full` (disk full or read-only), with `Retry-After`; null
 * for any other error.
 */
export function unavailableError(store: Store, err: unknown): AppError | null {
  if (err instanceof AppError) return null;
  const failure = store.condition.failureOf(err);
  if (!failure) return null;
  if (failure === 'unreachable' || failure === 'standby') {
    return new AppError('service_unavailable', 'The database is unreachable for the moment; retry shortly (with an Idempotency-Key a retry never sends twice).', {
      headers: { 'Retry-After': String(UNREACHABLE_RETRY_AFTER_S) },
    });
  }
  return new AppError('storage_full', failure === 'full' ? undefined : 'The server\'s storage is read-only for the moment; retry later.', {
    headers: { 'Retry-After': String(STORAGE_RETRY_AFTER_S) },
  });
}

/** Whether `err` means the store is unavailable (retry the same work later), not a fault of the work. */
export function isStoreUnavailable(store: Store, err: unknown): boolean {
  return store.condition.failureOf(err) !== null;
}

/** What `/ready` says of the store while it cannot take work. */
export function storeProblem(store: Store): { check: string; detail: string } | null {
  const problem = store.condition.problem;
  return problem ? { check: problemCheck(problem), detail: problem.detail } : null;
}

function problemCheck(problem: StoreProblem): string {
  return problem.failure === 'full' ? 'disk full' : problem.failure === 'read_only' ? 'read-only' : problem.failure;
}

/**
 * Logs the start of a store problem at error, again each minute while it lasts and failures go
 * on, and its end at info, so that the operator's log says why requests get 503. An outage comes
 * and goes many times in its first moments (connections end one by one while others still
 * answer): the end is logged once the store has held for `settleMs`, and a problem back before
 * that is the same outage, not a new line.
 */
export function logStoreCondition(store: Store, log: Logger, every = 60_000, settleMs = 1000): void {
  let since: number | null = null;
  let timer: NodeJS.Timeout | null = null;
  let ending: NodeJS.Timeout | null = null;
  store.condition.onChange((problem) => {
    if (problem) {
      if (ending) clearTimeout(ending);
      ending = null;
      if (since !== null) return;
      since = problem.since;
      log.error({ store: store.dialect, failure: problem.failure, detail: problem.detail }, `store unavailable: ${EXPLAIN[problem.failure]}; requests get 503 until it recovers`);
      timer = setInterval(() => {
        const now = store.condition.problem;
        if (now) log.error({ store: store.dialect, failure: now.failure, detail: now.detail, since: new Date(since!).toISOString() }, `store still unavailable: ${EXPLAIN[now.failure]}`);
      }, every).unref();
      return;
    }
    if (since === null || ending) return;
    ending = setTimeout(() => {
      ending = null;
      log.info({ store: store.dialect, down_ms: Date.now() - since! }, 'store available again');
      since = null;
      if (timer) clearInterval(timer);
      timer = null;
    }, settleMs).unref();
  });
}
