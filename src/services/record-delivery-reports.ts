/**
 * Carrier receipts are stored first (a `receipt` job, so the carrier can be acknowledged as soon
 * as the receipt is durable) and applied in batches by the receipt worker.
 */
import type { DeliveryReport } from '../carriers/carrier.ts';
import type { JobsTable, MessagesTable } from '../store/database.ts';
import { deleteJobs, enqueueJobs, rescheduleJob, type NewJob } from '../store/repositories/jobs.repository.ts';
import { messagesByIds } from '../store/repositories/messages.repository.ts';
import { applyStatusChange, enqueueFollowUps } from './message-status-changes.ts';
import type { Context } from './context.ts';

/**
 * A receipt can overtake the commit of the submit it reports on (SMPP answers deliver_sm on
 * another PDU than submit_sm_resp). Such a receipt is retried a few times before it is dropped.
 */
const EARLY_RECEIPT_RETRY_MS = 1000;
const EARLY_RECEIPT_MAX_ATTEMPTS = 30;

/** Stores a receipt durably; call before acknowledging it to the carrier. */
export async function recordDeliveryReport(ctx: Context, report: DeliveryReport): Promise<void> {
  const now = ctx.clock();
  await enqueueJobs(ctx.store.db, [{ queue: 'receipt', ref: report.carrierMessageId, payload: report, runAt: now }], now);
  ctx.wake('receipt');
}

async function findMessages(ctx: Context, reports: { job: JobsTable; report: DeliveryReport }[]): Promise<Map<string, MessagesTable>> {
  const byId = await messagesByIds(ctx.store.db, reports.filter((r) => r.report.byMessageId).map((r) => r.report.carrierMessageId));
  const found = new Map(byId.map((m) => [m.id, m]));
  const carrierIds = reports.filter((r) => !r.report.byMessageId).map((r) => r.report.carrierMessageId);
  if (carrierIds.length > 0) {
    const rows = await ctx.store.db.selectFrom('messages').selectAll().where('carrier_message_id', 'in', carrierIds).execute();
    for (const m of rows) found.set(`carrier:${m.carrier_message_id}`, m);
  }
  return found;
}

export async function applyReceiptJobs(ctx: Context, jobs: JobsTable[]): Promise<{ applied: number; dropped: number }> {
  const reports = jobs.map((job) => ({ job, report: JSON.parse(job.payload ?? '{}') as DeliveryReport }));
  const found = await findMessages(ctx, reports);
  const now = ctx.clock();
  const followUps: NewJob[] = [];
  const done: string[] = [];
  let applied = 0;
  let dropped = 0;
  await ctx.store.db.transaction().execute(async (trx) => {
    for (const { job, report } of reports) {
      const message = found.get(report.byMessageId ? report.carrierMessageId : `carrier:${report.carrierMessageId}`);
      if ((!message || message.status === 'pending') && job.attempts < EARLY_RECEIPT_MAX_ATTEMPTS) {
        await rescheduleJob(trx, job.id, now + EARLY_RECEIPT_RETRY_MS);
        continue;
      }
      done.push(job.id);
      if (!message) {
        dropped++;
        ctx.log.warn({ carrierMessageId: report.carrierMessageId }, 'receipt for an unknown message dropped');
        continue;
      }
      const next = await applyStatusChange(
        trx,
        message,
        { to: report.status, at: report.at, errorCode: report.errorCode, errorMessage: report.errorMessage },
        now,
        followUps,
      );
      if (next) {
        applied++;
        // Several parts of one message may report: the first final one decides.
        found.set(report.byMessageId ? report.carrierMessageId : `carrier:${report.carrierMessageId}`, next);
      }
    }
    await deleteJobs(trx, done);
    await enqueueFollowUps(trx, followUps, now);
  });
  if (followUps.length > 0) ctx.wake('webhook');
  return { applied, dropped };
}
