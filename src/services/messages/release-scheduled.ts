/**
 * The scheduler's use-case: releases scheduled messages that are due into the dispatch pipeline.
 * One transaction per batch moves the due messages to `pending` and enqueues their dispatch
 * (guarded by their status, see scheduled-messages.repository.ts), and fails those the
 * send-time checks refuse (send-time-checks.ts: suspended, sender withdrawn, recipient opted
 * out), with their jobs taken back, a refund and an `sms.failed` event, as at dispatch. A crash
 * before the commit leaves everything scheduled; after it, everything released: never both, never twice.
 */
import type { NewJob } from '../../store/repositories/jobs.repository.ts';
import { dueSliceBounds, nextSendAt, releaseDueMessages, stageDispatch, withdrawDispatch, type DueKey, type DueRange } from '../../store/repositories/scheduled-messages.repository.ts';
import { messagesByIds } from '../../store/repositories/messages.repository.ts';
import { retryingConflicts } from '../../store/retry-conflicts.ts';
import { messageTransitions, scheduledReleaseLateness } from '../../metrics.ts';
import { applyStatusChanges, enqueueFollowUps } from './message-status-changes.ts';
import { sendTimeRefusals } from './send-time-checks.ts';
import type { Context } from '../context.ts';

export interface ReleaseSummary {
  /** Messages moved out of `scheduled` (released to dispatch or failed at release). */
  claimed: number;
  released: number;
  failed: number;
  /** When the release committed, by the context's clock. */
  committedAt: number;
  /** The `send_at` of each message released. */
  sendAts: number[];
}

/** How long until the next scheduled message is due by the context's clock (0 if one is due now), or null when none is scheduled. */
export async function msUntilNextRelease(ctx: Context): Promise<number | null> {
  const next = await nextSendAt(ctx.store.db);
  return next === null ? null : Math.max(0, next - ctx.clock());
}

/**
 * How long before its `send_at` a scheduled message's dispatch job is written (staged), so that
 * the release, when it is due, only moves the message. Long enough for a campaign of 100,000 to be
 * staged well before its time; short, because staged jobs sit in the dispatch queue's index (and
 * its walk over accounts) until they are due.
 */
export const STAGE_AHEAD_MS = 30_000;

/**
 * Stages the dispatch jobs of up to `limit` scheduled messages due within STAGE_AHEAD_MS (not yet
 * due: those are the release's), after `after` in due order when given; returns how many it
 * looked at and the last one's key, from which the next call goes on. A message scheduled after
 * its place in the order was passed is not staged: its release writes its job.
 */
export async function stageUpcomingDispatch(ctx: Context, after: DueKey | undefined, limit: number): Promise<{ looked: number; last: DueKey | null }> {
  const now = ctx.clock();
  return ctx.store.db.transaction().execute((trx) => stageDispatch(trx, now, now + STAGE_AHEAD_MS, after, limit));
}

/**
 * The slices of the release order that `slices` releases of `limit` messages each can take side by
 * side, each in its own transaction: as many as there are messages due (at least one), the last
 * one open-ended. Released side by side without slices, the releases would all start at the
 * earliest due message and step over the rows the others hold, each costing the others more
 * than it adds.
 */
export async function releaseSlices(ctx: Context, limit: number, slices: number): Promise<DueRange[]> {
  if (slices <= 1) return [{}];
  const bounds = await dueSliceBounds(ctx.store.db, ctx.clock(), limit, slices);
  const ranges: DueRange[] = [];
  let after: DueRange['after'];
  for (const upTo of bounds.slice(0, slices - 1)) {
    ranges.push(after ? { after, upTo } : { upTo });
    after = upTo;
  }
  ranges.push(after ? { after } : {});
  return ranges;
}

/** Releases up to `limit` due messages (of `range`, when given); returns what it did. */
export async function releaseScheduledMessages(ctx: Context, limit: number, range: DueRange = {}): Promise<ReleaseSummary> {
  // PostgreSQL may abort the transaction to break a deadlock with a cancel or a send.
  return retryingConflicts(() => releaseOnce(ctx, limit, range));
}

async function releaseOnce(ctx: Context, limit: number, range: DueRange): Promise<ReleaseSummary> {
  const now = ctx.clock();
  const summary = await ctx.store.db.transaction().execute(async (trx) => {
    // Released and queued for dispatch in one statement where the database allows it.
    const due = await releaseDueMessages(trx, now, limit, range);
    if (due.length === 0) return { claimed: 0, released: 0, failed: 0, webhooks: false, sendAts: [] };
    const sendAts = due.map((m) => Number(m.send_at));
    const refusals = await sendTimeRefusals(trx, due);
    if (refusals.size === 0) return { claimed: due.length, released: due.length, failed: 0, webhooks: false, sendAts };
    // The refused ones (rare): their jobs are taken back, and they fail as at dispatch, with a
    // refund and the `sms.failed` event. Refunds lock account rows: in account order, as
    // acceptance and dispatch lock them.
    const refusedIds = due.filter((m) => refusals.has(m.id)).map((m) => m.id);
    await withdrawDispatch(trx, refusedIds);
    const refused = (await messagesByIds(trx, refusedIds)).sort((a, b) => (a.account_id < b.account_id ? -1 : a.account_id > b.account_id ? 1 : 0));
    const followUps: NewJob[] = [];
    const outcomes = await applyStatusChanges(
      trx,
      refused.map((message) => {
        const refusal = refusals.get(message.id)!;
        return { message, change: { to: 'failed' as const, at: now, errorCode: refusal.code, errorMessage: refusal.message } };
      }),
      now,
      followUps,
    );
    await enqueueFollowUps(trx, followUps, now);
    return { claimed: due.length, released: due.length - refusedIds.length, failed: outcomes.filter((o) => o !== null).length, webhooks: followUps.length > 0, sendAts };
  });
  const committedAt = ctx.clock();
  if (summary.claimed > 0) {
    messageTransitions.inc({ status: 'pending' }, summary.claimed);
    for (const at of summary.sendAts) scheduledReleaseLateness.observe(Math.max(0, committedAt - at) / 1000);
  }
  if (summary.released > 0) ctx.wake('dispatch');
  if (summary.webhooks) ctx.wake('webhook');
  return { claimed: summary.claimed, released: summary.released, failed: summary.failed, committedAt, sendAts: summary.sendAts };
}
