/**
 * Backpressure, fair between accounts. When dispatch cannot keep up, acceptance stops growing the
 * backlog, in two ways:
 * - the whole service: a send that would take the messages waiting for dispatch past
 *   `DISPATCH_BACKLOG_LIMIT` is refused with 503 `service_unavailable`;
 * - one account: a send that would take that account's waiting messages past its share of that
 *   limit (`DISPATCH_BACKLOG_ACCOUNT_SHARE` per cent) is refused with 429 `rate_limit_exceeded`,
 *   while other accounts go on; an account with nothing waiting may always send one request,
 *   whatever its size.
 * Both carry `Retry-After`: the time dispatch needs, at the rate it was measured to drain, to make
 * room for the request. Dispatch serves accounts in turn (jobs.repository.ts), so an account under
 * its share is not held behind another's campaign either.
 *
 * The backlog is counted at most once a second per process, for the whole service and for each
 * account that sends (counting on every request would cost more than the request). Between two
 * readings the process adds what it admitted itself, so a burst of concurrent requests cannot all
 * pass on one reading: the bounds are exact for one process's own traffic, and approximate by
 * about one second of the other processes' traffic. The drain rate comes from two readings: the
 * jobs of the first that the second no longer finds were worked off in between, by any process.
 */
import { AppError } from '../../errors/catalogue.ts';
import { readRows, type Store } from '../../store/connect.ts';
import { backlogOf, dispatchBacklogByAccount, dispatchBacklogQuery, type DispatchBacklog } from '../../store/repositories/jobs.repository.ts';
import type { Context } from '../context.ts';

const REFRESH_MS = 1000;
/** `Retry-After` before any drain rate was measured. */
const DEFAULT_RETRY_SECONDS = 5;
/** The longest `Retry-After`: beyond it the estimate says little (dispatch stopped, say). */
const MAX_RETRY_SECONDS = 60;
/** Accounts whose readings a process keeps; beyond it they are dropped and read again. */
const MAX_ACCOUNT_READINGS = 10_000;

interface Reading {
  /** Dispatch jobs the database counted at the last reading. */
  depth: number;
  /**
   * Messages this process admitted that `depth` may not count: those admitted since the reading,
   * and those whose acceptance had not finished when it was taken. A refused or failed acceptance
   * stays counted until the next reading: an over-count, the safe side.
   */
  reserved: number;
  /** Messages admitted by this process whose acceptance has not finished yet. */
  accepting: number;
  oldestCreatedAt: number | null;
  at: number;
  /** Messages worked off per second, smoothed over the readings; null until it was measured. */
  rate: number | null;
  refreshing: Promise<void> | null;
}

interface Readings {
  all: Reading;
  accounts: Map<string, Reading>;
}

const byStore = new WeakMap<Store, Readings>();

function readingsOf(store: Store): Readings {
  let r = byStore.get(store);
  if (!r) {
    r = { all: fresh(), accounts: new Map() };
    byStore.set(store, r);
  }
  return r;
}

function fresh(): Reading {
  return { depth: 0, reserved: 0, accepting: 0, oldestCreatedAt: null, at: -Infinity, rate: null, refreshing: null };
}

/**
 * The drain rate (messages per second) once a new reading, taken at `now`, finds `left` of the
 * `previous.depth` jobs counted at `previous.at` still waiting; `previous.rate` is the estimate so
 * far. A sample that says nothing of dispatch's speed must not pull the estimate down, or the first
 * refusals after a quiet spell would ask clients to wait the longest:
 * - a previous backlog of 0: dispatch had nothing to do, whatever its speed;
 * - a previous backlog worked off entirely: dispatch may have finished it early in the interval
 *   and idled after, so the sample is only a lower bound, taken only when it raises the estimate.
 * Other samples are averaged with the estimate, each halving the weight of the older ones.
 */
export function nextDrainRate(previous: { depth: number; at: number; rate: number | null }, left: number, now: number): number | null {
  if (!Number.isFinite(previous.at) || now <= previous.at || previous.depth === 0) return previous.rate;
  const sample = (Math.max(0, previous.depth - left) * 1000) / (now - previous.at);
  if (left <= 0) return previous.rate === null ? sample : Math.max(previous.rate, sample);
  return previous.rate === null ? sample : 0.5 * previous.rate + 0.5 * sample;
}

async function refreshed(ctx: Context, reading: Reading, read: (now: number, since: number) => Promise<DispatchBacklog>): Promise<Reading> {
  const now = ctx.clock();
  if (now - reading.at < REFRESH_MS) return reading;
  reading.refreshing ??= (async () => {
    // What was still being accepted when the read began may be missing from it, and so may what
    // is admitted while it runs: both stay reserved. What finished before is in the new depth.
    const accepting = reading.accepting;
    const reservedBefore = reading.reserved;
    try {
      const b = await read(now, Number.isFinite(reading.at) ? reading.at : now);
      // From the database's counts only: what this process reserved is not in either reading.
      reading.rate = nextDrainRate(reading, b.createdBy, now);
      reading.depth = b.depth;
      reading.reserved = accepting + (reading.reserved - reservedBefore);
      reading.oldestCreatedAt = b.oldestCreatedAt;
      reading.at = now;
    } finally {
      reading.refreshing = null;
    }
  })();
  await reading.refreshing;
  return reading;
}

/** Seconds until dispatch, at the measured rate, has worked off `excess` messages. */
export function retryAfterSeconds(excess: number, rate: number | null): number {
  if (rate === null) return DEFAULT_RETRY_SECONDS;
  if (rate <= 0) return MAX_RETRY_SECONDS;
  return Math.min(MAX_RETRY_SECONDS, Math.max(1, Math.ceil(excess / rate)));
}

/** The most messages one account may have waiting for dispatch. */
export function accountShare(ctx: Context): number {
  return Math.max(1, Math.floor((ctx.config.dispatchBacklogLimit * ctx.config.dispatchBacklogAccountShare) / 100));
}

/** Reads the dispatch backlog (`dispatchBacklog` of jobs.repository.ts); replaced in unit tests. */
export type BacklogReader = (now: number, since: number, accountId?: string) => Promise<DispatchBacklog>;

// The count covers every waiting job: during a flood tens of thousands, milliseconds of SQLite
// work that, on the event loop, held every request each time a reading fell due. On a SQLite
// file it runs on a reader thread; the requests that wait for it are the ones that need it.
function storeReader(store: Store): BacklogReader {
  return async (now, since, accountId) => backlogOf((await readRows(store, dispatchBacklogQuery(store.read, now, since, accountId)))[0]);
}

function refuseIfFull(ctx: Context, all: Reading, messages: number): void {
  const limit = ctx.config.dispatchBacklogLimit;
  const waiting = all.depth + all.reserved;
  if (waiting + messages <= limit) return;
  const wait = retryAfterSeconds(waiting + messages - limit, all.rate);
  throw new AppError('service_unavailable', `${waiting} messages are waiting for dispatch (the limit is ${limit}); retry in ${wait} s.`, {
    headers: { 'Retry-After': String(wait) },
  });
}

/**
 * Throws 503 when accepting `messages` more would take the whole backlog over its limit, 429 when
 * it would take the account's over its share. Otherwise counts them as admitted, and returns the
 * function to call once their acceptance has finished, committed or not.
 */
export async function checkBacklog(ctx: Context, accountId: string, messages: number, read: BacklogReader = storeReader(ctx.store)): Promise<() => void> {
  const readings = readingsOf(ctx.store);
  const all = await refreshed(ctx, readings.all, (now, since) => read(now, since));
  // Refused at once when the service is full, without reading the account's backlog.
  refuseIfFull(ctx, all, messages);
  let mine = readings.accounts.get(accountId);
  if (!mine) {
    if (readings.accounts.size >= MAX_ACCOUNT_READINGS) readings.accounts.clear();
    mine = fresh();
    readings.accounts.set(accountId, mine);
  }
  await refreshed(ctx, mine, (now, since) => read(now, since, accountId));
  // From here to the reservation nothing awaits: concurrent requests each see what the ones
  // before them admitted, so a burst cannot pass on one reading.
  refuseIfFull(ctx, all, messages);
  const share = accountShare(ctx);
  const waiting = mine.depth + mine.reserved;
  if (waiting > 0 && waiting + messages > share) {
    const wait = retryAfterSeconds(waiting + messages - share, mine.rate);
    throw new AppError(
      'rate_limit_exceeded',
      `This account has ${waiting} messages waiting for dispatch, and may have ${share} (its share of the service's backlog); retry in ${wait} s.`,
      {
        // As every 429 (DECISIONS.md §1), with the RateLimit headers; here they count messages
        // waiting for dispatch: the account's share, what is left of it, and when to retry.
        headers: {
          'Retry-After': String(wait),
          'RateLimit-Limit': String(share),
          'RateLimit-Remaining': String(Math.max(0, share - waiting)),
          'RateLimit-Reset': String(wait),
        },
      },
    );
  }
  const admitted = [all, mine];
  for (const r of admitted) {
    r.reserved += messages;
    r.accepting += messages;
  }
  let done = false;
  return () => {
    if (done) return;
    done = true;
    for (const r of admitted) r.accepting -= messages;
  };
}

export interface AccountBacklog {
  accountId: string;
  depth: number;
  oldestAgeSeconds: number;
}

/**
 * The `each` accounts with the most messages waiting for dispatch and the `each` whose oldest
 * message has waited longest (the operator's view), largest first.
 */
export async function accountBacklogs(ctx: Context, each: number): Promise<AccountBacklog[]> {
  const now = ctx.clock();
  return (await dispatchBacklogByAccount(ctx.store.read, now, each)).map((b) => ({
    accountId: b.accountId,
    depth: b.depth,
    oldestAgeSeconds: Math.max(0, (now - b.oldestCreatedAt) / 1000),
  }));
}

/** The drain rate this process measured last (messages per second), or null before two readings. */
export function measuredDrainRate(store: Store): number | null {
  return byStore.get(store)?.all.rate ?? null;
}

export interface BacklogOverview {
  depth: number;
  limit: number;
  share: number;
  /** Messages per second, as this process last measured it; null before two readings. */
  drainRate: number | null;
  oldestAgeSeconds: number;
  accounts: AccountBacklog[];
}

/**
 * The operator's view: the whole backlog, its bounds, and the accounts of `accountBacklogs`: the
 * `accounts` largest and the `accounts` waiting longest.
 */
export async function backlogOverview(ctx: Context, accounts: number): Promise<BacklogOverview> {
  const now = ctx.clock();
  const all = await storeReader(ctx.store)(now, now);
  return {
    depth: all.depth,
    limit: ctx.config.dispatchBacklogLimit,
    share: accountShare(ctx),
    drainRate: measuredDrainRate(ctx.store),
    oldestAgeSeconds: all.oldestCreatedAt === null ? 0 : Math.max(0, (now - all.oldestCreatedAt) / 1000),
    accounts: await accountBacklogs(ctx, accounts),
  };
}
