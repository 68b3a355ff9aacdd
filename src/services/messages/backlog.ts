/**
 * Backpressure: when dispatch cannot keep up, acceptance stops growing the backlog. Sends are
 * refused with 503 `service_unavailable` and `Retry-After` while the dispatch queue holds more
 * than `DISPATCH_BACKLOG_LIMIT` messages. The queue is counted at most once a second per process
 * (counting on every request would cost more than the request), so the limit is approximate by
 * about one second of traffic.
 */
import { AppError } from '../../errors/catalogue.ts';
import type { Store } from '../../store/connect.ts';
import { queueDepth } from '../../store/repositories/jobs.repository.ts';
import type { Context } from '../context.ts';

const REFRESH_MS = 1000;
/** The client's wait: about the time dispatch needs to work off a second of traffic. */
const RETRY_AFTER_SECONDS = 5;

interface Reading {
  depth: number;
  at: number;
  refreshing: Promise<void> | null;
}

const readings = new WeakMap<Store, Reading>();

async function dispatchBacklog(ctx: Context): Promise<number> {
  const now = ctx.clock();
  let reading = readings.get(ctx.store);
  if (!reading) {
    reading = { depth: 0, at: -Infinity, refreshing: null };
    readings.set(ctx.store, reading);
  }
  if (now - reading.at >= REFRESH_MS) {
    const r = reading;
    r.refreshing ??= queueDepth(ctx.store.read, 'dispatch')
      .then(({ depth }) => {
        r.depth = depth;
        r.at = now;
      })
      .finally(() => {
        r.refreshing = null;
      });
    await r.refreshing;
  }
  return reading.depth;
}

/** Throws 503 when accepting `messages` more would take the backlog over the limit. */
export async function checkBacklog(ctx: Context, messages: number): Promise<void> {
  const limit = ctx.config.dispatchBacklogLimit;
  const depth = await dispatchBacklog(ctx);
  if (depth + messages > limit) {
    throw new AppError(
      'service_unavailable',
      `${depth} messages are waiting for dispatch (the limit is ${limit}); retry in ${RETRY_AFTER_SECONDS} s.`,
      { headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) } },
    );
  }
}
