/**
 * Hands claimed dispatch jobs to the carrier and records each outcome. A message is submitted
 * only while it is `pending`; if the process dies after the carrier took it but before the
 * outcome was committed, the job's lease runs out and it is submitted again (at-least-once,
 * with Pigeon's message id passed to the carrier so it can drop the repeat).
 */
import type { Carrier, OutboundMessage, SubmitOutcome } from '../../carriers/carrier.ts';
import { carrierIdKeys } from '../../carriers/carrier-ids.ts';
import type { CarrierPartsTable, JobsTable, MessagesTable } from '../../store/database.ts';
import { deferJobs, deleteJobs, rescheduleJob, type NewJob } from '../../store/repositories/jobs.repository.ts';
import { messagesByIds } from '../../store/repositories/messages.repository.ts';
import { insertCarrierParts } from '../../store/repositories/carrier-receipts.repository.ts';
import { applyStatusChange, applyStatusChanges, enqueueFollowUps } from './message-status-changes.ts';
import type { Context } from '../context.ts';
import { carrierSubmits } from '../../metrics.ts';
import { sendTimeRefusals, type SendTimeRefusal } from './send-time-checks.ts';

export interface DispatchSummary {
  sent: number;
  failed: number;
  retried: number;
  /** Jobs of scheduled messages not released yet, put back for a moment. */
  waiting: number;
  skipped: number;
}

/**
 * How long a dispatch job staged for a scheduled message waits again when it comes due before the
 * scheduler released its message (a large release runs for a second or two).
 */
const UNRELEASED_RECHECK_MS = 1000;

function outbound(m: MessagesTable): OutboundMessage {
  const message: OutboundMessage = { id: m.id, recipient: m.recipient, sender: m.sender, body: m.body, encoding: m.encoding, segments: m.segments };
  if (m.expires_at !== null) message.validUntil = Number(m.expires_at);
  return message;
}

/** The outcome of a message whose validity period ended before it could be handed over. */
const EXPIRED: SubmitOutcome = { kind: 'rejected', errorCode: 'expired', errorMessage: 'The validity period ended before the message could be dispatched.' };

export async function dispatchJobs(ctx: Context, carrier: Carrier, jobs: JobsTable[]): Promise<DispatchSummary> {
  const summary: DispatchSummary = { sent: 0, failed: 0, retried: 0, waiting: 0, skipped: 0 };
  const messages = new Map((await messagesByIds(ctx.store.db, jobs.map((j) => j.ref))).map((m) => [m.id, m]));
  const work = jobs.flatMap((job) => {
    const message = messages.get(job.ref);
    return message && message.status === 'pending' ? [{ job, message }] : [];
  });
  // A job staged ahead of its message's release (scheduled-messages.repository.ts) stays: the
  // release keeps it rather than writing another.
  const unreleased = jobs.filter((j) => messages.get(j.ref)?.status === 'scheduled').map((j) => j.id);
  summary.waiting = unreleased.length;
  summary.skipped = jobs.length - work.length - unreleased.length;
  // A message past its validity period is not handed over: it fails `expired`, refunded. One
  // refused since acceptance (opted out, suspended, sender withdrawn) fails and is refunded too.
  const started = ctx.clock();
  const expired = (w: (typeof work)[number]) => w.message.expires_at !== null && Number(w.message.expires_at) <= started;
  const live = work.filter((w) => !expired(w));
  const refusals = live.length > 0 ? await sendTimeRefusals(ctx.store.db, live.map((w) => w.message)) : new Map<string, SendTimeRefusal>();
  const toSubmit = live.filter((w) => !refusals.has(w.message.id));
  const submitted = toSubmit.length > 0 ? await carrier.submit(toSubmit.map((w) => outbound(w.message))) : [];
  const submittedOutcome = new Map(toSubmit.map((w, i) => [w.message.id, submitted[i]!]));
  const outcomes: SubmitOutcome[] = work.map((w) => {
    if (expired(w)) return EXPIRED;
    const refusal = refusals.get(w.message.id);
    return refusal ? { kind: 'rejected', errorCode: refusal.code, errorMessage: refusal.message } : submittedOutcome.get(w.message.id)!;
  });
  const now = ctx.clock();
  const followUps: NewJob[] = [];
  const kept = new Set([...work.map((w) => w.job.id), ...unreleased]);
  const done: string[] = jobs.filter((j) => !kept.has(j.id)).map((j) => j.id);
  const parts: CarrierPartsTable[] = [];
  // Refunds lock account rows: they come last, in account order, the order in which acceptance
  // locks them too, so a dispatch and a send can never wait on each other in a cycle.
  const order = work
    .map((_, i) => i)
    .sort((a, b) => {
      const ra = outcomes[a]!.kind === 'rejected' ? 1 : 0;
      const rb = outcomes[b]!.kind === 'rejected' ? 1 : 0;
      if (ra !== rb || ra === 0) return ra - rb || a - b;
      return work[a]!.message.account_id < work[b]!.message.account_id ? -1 : work[a]!.message.account_id > work[b]!.message.account_id ? 1 : a - b;
    });
  await ctx.store.db.transaction().execute(async (trx) => {
    const accepted: { i: number; outcome: Extract<SubmitOutcome, { kind: 'accepted' }> }[] = [];
    const rejected: { i: number; outcome: Extract<SubmitOutcome, { kind: 'rejected' }> }[] = [];
    for (const i of order) {
      const { job } = work[i]!;
      const outcome = outcomes[i]!;
      if (outcome.kind === 'retry') {
        await rescheduleJob(trx, job.id, now + outcome.delayMs);
        summary.retried++;
        continue;
      }
      done.push(job.id);
      if (outcome.kind === 'accepted') accepted.push({ i, outcome });
      else rejected.push({ i, outcome });
    }
    // The accepted ones (most of a batch) move to `sent` together: one UPDATE, not one each.
    const sent = await applyStatusChanges(
      trx,
      accepted.map(({ i, outcome }) => ({ message: work[i]!.message, change: { to: 'sent' as const, at: now, carrierMessageId: outcome.carrierMessageId } })),
      now,
      followUps,
    );
    accepted.forEach(({ i, outcome }, k) => {
      if (!sent[k]) return;
      summary.sent++;
      const message = work[i]!.message;
      outcome.carrierPartIds?.forEach((carrierId, partIndex) => {
        const { key, alt } = carrierIdKeys(carrierId);
        parts.push({ message_id: message.id, part_index: partIndex, carrier_id: carrierId, part_key: key, part_alt: alt, created_at: now });
      });
      if (outcome.scheduledReport) {
        const { dueAt, ...report } = outcome.scheduledReport;
        followUps.push({ queue: 'receipt', ref: message.id, payload: report, runAt: dueAt });
      }
    });
    for (const { i, outcome } of rejected) {
      const applied = await applyStatusChange(
        trx,
        work[i]!.message,
        { to: 'failed', at: now, errorCode: outcome.errorCode, errorMessage: outcome.errorMessage },
        now,
        followUps,
      );
      if (applied) summary.failed++;
    }
    await insertCarrierParts(trx, parts);
    await deleteJobs(trx, done);
    await deferJobs(trx, unreleased, now + UNRELEASED_RECHECK_MS);
    await enqueueFollowUps(trx, followUps, now);
  });
  if (followUps.some((j) => j.queue === 'webhook')) ctx.wake('webhook');
  carrierSubmits.inc({ carrier: carrier.name, outcome: 'accepted' }, summary.sent);
  carrierSubmits.inc({ carrier: carrier.name, outcome: 'rejected' }, summary.failed);
  carrierSubmits.inc({ carrier: carrier.name, outcome: 'retry' }, summary.retried);
  return summary;
}
