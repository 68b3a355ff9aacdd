/**
 * Backpressure, fair between accounts. When dispatch cannot keep up, acceptance stops growing the
 * backlog, in two ways:
 * - the whole service: past `DISPATCH_BACKLOG_LIMIT` messages waiting for dispatch, sends are
 *   refused with 503 `service_unavailable`;
 * - one account: past its share of that limit (`DISPATCH_BACKLOG_ACCOUNT_SHARE` per cent), that
 *   account's sends are refused with 429 `rate_limit_exceeded`, while other accounts go on; an
 *   account with nothing waiting may always send one request, whatever its size.
 * Both carry `Retry-After`: the time dispatch needs, at the rate it was measured to drain, to make
 * room for the request. Dispatch serves accounts in turn (jobs.repository.ts), so an account under
 * its share is not held behind another's campaign either.
 *
 * The backlog is counted at most once a second per process, for the whole service and for each
 * account that sends (counting on every request would cost more than the request), so the limits
 * are approximate by about one second of traffic. The drain rate comes from two readings: the jobs
 * of the first that the second no longer finds were worked off in between, by any process.
 */
import { AppError } from '../../errors/catalogue.ts';
import type { Store } from '../../store/connect.ts';
import { dispatchBacklog as readBacklog, dispatchBacklogByAccount, type DispatchBacklog } from '../../store/repositories/jobs.repository.ts';
import type { Context } from '../context.ts';

const REFRESH_MS = 1000;
/** `Retry-After` before any drain rate was measured. */
const DEFAULT_RETRY_SECONDS = 5;
/** The longest `Retry-After`: beyond it the estimate says little (dispatch stopped, say). */
const MAX_RETRY_SECONDS = 60;
/** Accounts whose readings a process keeps; beyond it they are dropped and read again. */
const MAX_ACCOUNT_READINGS = 10_000;

interface Reading {
  depth: number;
  oldestCreatedAt: number | null;
  at: number;
  /** Messages worked off per second, smoothed over the readings; null until two were taken. */
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
  return { depth: 0, oldestCreatedAt: null, at: -Infinity, rate: null, refreshing: null };
}

async function refreshed(ctx: Context, reading: Reading, read: (now: number, since: number) => Promise<DispatchBacklog>): Promise<Reading> {
  const now = ctx.clock();
  if (now - reading.at < REFRESH_MS) return reading;
  reading.refreshing ??= read(now, Number.isFinite(reading.at) ? reading.at : now)
    .then((b) => {
      if (Number.isFinite(reading.at) && now > reading.at) {
        const drained = Math.max(0, reading.depth - b.createdBy);
        const sample = (drained * 1000) / (now - reading.at);
        reading.rate = reading.rate === null ? sample : 0.5 * reading.rate + 0.5 * sample;
      }
      reading.depth = b.depth;
      reading.oldestCreatedAt = b.oldestCreatedAt;
      reading.at = now;
    })
    .finally(() => {
      reading.refreshing = null;
    });
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

/**
 * Throws 503 when accepting `messages` more would take the whole backlog over its limit, 429 when
 * it would take the account's over its share.
 */
export async function checkBacklog(ctx: Context, accountId: string, messages: number): Promise<void> {
  const readings = readingsOf(ctx.store);
  const limit = ctx.config.dispatchBacklogLimit;
  const all = await refreshed(ctx, readings.all, (now, since) => readBacklog(ctx.store.read, now, since));
  if (all.depth + messages > limit) {
    const wait = retryAfterSeconds(all.depth + messages - limit, all.rate);
    throw new AppError('service_unavailable', `${all.depth} messages are waiting for dispatch (the limit is ${limit}); retry in ${wait} s.`, {
      headers: { 'Retry-After': String(wait) },
    });
  }
  let reading = readings.accounts.get(accountId);
  if (!reading) {
    if (readings.accounts.size >= MAX_ACCOUNT_READINGS) readings.accounts.clear();
    reading = fresh();
    readings.accounts.set(accountId, reading);
  }
  const mine = await refreshed(ctx, reading, (now, since) => readBacklog(ctx.store.read, now, since, accountId));
  const share = accountShare(ctx);
  if (mine.depth > 0 && mine.depth + messages > share) {
    const wait = retryAfterSeconds(mine.depth + messages - share, mine.rate);
    throw new AppError(
      'rate_limit_exceeded',
      `This account has ${mine.depth} messages waiting for dispatch, and may have ${share} (its share of the service's backlog); retry in ${wait} s.`,
      {
        // As every 429 (DECISIONS.md §1), with the RateLimit headers; here they count messages
        // waiting for dispatch: the account's share, what is left of it, and when to retry.
        headers: {
          'Retry-After': String(wait),
          'RateLimit-Limit': String(share),
          'RateLimit-Remaining': String(Math.max(0, share - mine.depth)),
          'RateLimit-Reset': String(wait),
        },
      },
    );
  }
}

export interface AccountBacklog {
  accountId: string;
  depth: number;
  oldestAgeSeconds: number;
}

/** The accounts with the most messages waiting for dispatch (for /metrics and the operator). */
export async function largestAccountBacklogs(ctx: Context, limit: number): Promise<AccountBacklog[]> {
  const now = ctx.clock();
  return (await dispatchBacklogByAccount(ctx.store.read, now, limit)).map((b) => ({
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

/** The operator's view: the whole backlog, its bounds, and the accounts with the most waiting. */
export async function backlogOverview(ctx: Context, accounts: number): Promise<BacklogOverview> {
  const now = ctx.clock();
  const all = await readBacklog(ctx.store.read, now, now);
  return {
    depth: all.depth,
    limit: ctx.config.dispatchBacklogLimit,
    share: accountShare(ctx),
    drainRate: measuredDrainRate(ctx.store),
    oldestAgeSeconds: all.oldestCreatedAt === null ? 0 : Math.max(0, (now - all.oldestCreatedAt) / 1000),
    accounts: await largestAccountBacklogs(ctx, accounts),
  };
}
