/**
 * The scheduler's use-case: releases scheduled messages that are due into the dispatch pipeline.
 * One transaction per batch moves the due messages to `pending` (guarded by their status, see
 * scheduled-messages.repository.ts), fails those the release-time checks refuse (with a refund
 * and an `sms.failed` event, as at dispatch) and enqueues the dispatch of the rest. A crash before
 * the commit leaves everything scheduled; after it, everything released: never both, never twice.
 */
import type { NewJob } from '../../store/repositories/jobs.repository.ts';
import { releaseDueMessages } from '../../store/repositories/scheduled-messages.repository.ts';
import { messageTransitions } from '../../metrics.ts';
import { applyStatusChanges, enqueueFollowUps } from './message-status-changes.ts';
import { releaseRefusals } from './release-checks.ts';
import type { Context } from '../context.ts';

export interface ReleaseSummary {
  /** Messages moved out of `scheduled` (released to dispatch or failed at release). */
  claimed: number;
  released: number;
  failed: number;
}

/** Releases up to `limit` due messages; returns what it did. */
export async function releaseScheduledMessages(ctx: Context, limit: number): Promise<ReleaseSummary> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await releaseOnce(ctx, limit);
    } catch (error) {
      // PostgreSQL may abort the transaction to break a deadlock with a cancel or a send; nothing
      // of it was written, so it is run again.
      const code = (error as { code?: string }).code;
      if (attempt >= 4 || (code !== '40P01' && code !== '40001')) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5 * attempt + Math.random() * 20));
    }
  }
}

async function releaseOnce(ctx: Context, limit: number): Promise<ReleaseSummary> {
  const now = ctx.clock();
  const summary = await ctx.store.db.transaction().execute(async (trx) => {
    const due = await releaseDueMessages(trx, now, limit);
    if (due.length === 0) return { claimed: 0, released: 0, failed: 0 };
    const refusals = await releaseRefusals(trx, due);
    const followUps: NewJob[] = [];
    let failed = 0;
    if (refusals.size > 0) {
      // Refunds lock account rows: in account order, as acceptance and dispatch lock them.
      const refused = due.filter((m) => refusals.has(m.id)).sort((a, b) => (a.account_id < b.account_id ? -1 : a.account_id > b.account_id ? 1 : 0));
      const outcomes = await applyStatusChanges(
        trx,
        refused.map((message) => {
          const refusal = refusals.get(message.id)!;
          return { message, change: { to: 'failed' as const, at: now, errorCode: refusal.code, errorMessage: refusal.message } };
        }),
        now,
        followUps,
      );
      failed = outcomes.filter((o) => o !== null).length;
    }
    const released = due.filter((m) => !refusals.has(m.id));
    for (const m of released) followUps.push({ queue: 'dispatch', ref: m.id, runAt: now });
    await enqueueFollowUps(trx, followUps, now);
    return { claimed: due.length, released: released.length, failed, webhooks: followUps.some((j) => j.queue === 'webhook') };
  });
  if (summary.claimed > 0) messageTransitions.inc({ status: 'pending' }, summary.claimed);
  if (summary.released > 0) ctx.wake('dispatch');
  if ('webhooks' in summary && summary.webhooks) ctx.wake('webhook');
  return { claimed: summary.claimed, released: summary.released, failed: summary.failed };
}
