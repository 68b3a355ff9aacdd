/**
 * Carrier receipts are stored first (a `receipt` job, so the carrier can be acknowledged as soon
 * as the receipt is durable) and applied in batches by the receipt worker.
 */
import type { DeliveryReport } from '../carriers/carrier.ts';
import { carrierIdKeys, matchRank } from '../carriers/carrier-ids.ts';
import type { JobsTable, MessagesTable } from '../store/database.ts';
import { deleteJobs, enqueueJobs, releaseJobs, type NewJob } from '../store/repositories/jobs.repository.ts';
import { messagesByIds } from '../store/repositories/messages.repository.ts';
import { applyStatusChange, applyStatusChanges, enqueueFollowUps, type StatusChange } from './message-status-changes.ts';
import type { Context } from './context.ts';

/**
 * A receipt can overtake the commit of the submit it reports on (SMPP answers deliver_sm on
 * another PDU than submit_sm_resp). Such a receipt is retried a few times before it is dropped.
 */
const EARLY_RECEIPT_RETRY_MS = 1000;
const EARLY_RECEIPT_MAX_ATTEMPTS = 30;

/**
 * Receipts that arrive together (an SMSC sends thousands a second) are written as one multi-row
 * insert: each caller still waits for the commit that holds its receipt.
 */
interface PendingReceipts {
  reports: DeliveryReport[];
  waiters: { resolve: () => void; reject: (err: unknown) => void }[];
}
const pendingReceipts = new WeakMap<Context, PendingReceipts>();

/** Stores a receipt durably; call before acknowledging it to the carrier. */
export function recordDeliveryReport(ctx: Context, report: DeliveryReport): Promise<void> {
  let batch = pendingReceipts.get(ctx);
  if (!batch) {
    const fresh: PendingReceipts = { reports: [], waiters: [] };
    batch = fresh;
    pendingReceipts.set(ctx, fresh);
    setImmediate(() => {
      pendingReceipts.delete(ctx);
      const now = ctx.clock();
      enqueueJobs(
        ctx.store.db,
        fresh.reports.map((r) => ({ queue: 'receipt' as const, ref: r.carrierMessageId, payload: r, runAt: now })),
        now,
      ).then(
        () => {
          ctx.wake('receipt');
          fresh.waiters.forEach((w) => w.resolve());
        },
        (err: unknown) => fresh.waiters.forEach((w) => w.reject(err)),
      );
    });
  }
  batch.reports.push(report);
  return new Promise((resolve, reject) => batch.waiters.push({ resolve, reject }));
}

async function findMessages(ctx: Context, reports: { job: JobsTable; report: DeliveryReport }[]): Promise<Map<string, MessagesTable>> {
  const byId = await messagesByIds(ctx.store.db, reports.filter((r) => r.report.byMessageId).map((r) => r.report.carrierMessageId));
  const found = new Map(byId.map((m) => [m.id, m]));
  const carrierIds = [...new Set(reports.filter((r) => !r.report.byMessageId).map((r) => r.report.carrierMessageId))];
  if (carrierIds.length > 0) {
    const rows = await ctx.store.db.selectFrom('messages').selectAll().where('carrier_message_id', 'in', carrierIds).execute();
    for (const m of rows) found.set(`carrier:${m.carrier_message_id}`, m);
    const missing = carrierIds.filter((id) => !found.has(`carrier:${id}`));
    if (missing.length > 0) for (const [id, m] of await findByPartIds(ctx, missing)) found.set(`carrier:${id}`, m);
  }
  return found;
}

/**
 * Finds messages by the id of any of their parts (`carrier_parts`), however the carrier spells
 * it (hex or decimal, leading zeros); an exact spelling wins over a converted one.
 */
async function findByPartIds(ctx: Context, carrierIds: string[]): Promise<Map<string, MessagesTable>> {
  const wanted = carrierIds.map((id) => ({ id, keys: carrierIdKeys(id) }));
  const lookFor = [...new Set(wanted.flatMap((w) => (w.keys.alt === null ? [w.keys.key] : [w.keys.key, w.keys.alt])))];
  const parts = await ctx.store.db
    .selectFrom('carrier_parts')
    .select(['message_id', 'part_key', 'part_alt'])
    .where((eb) => eb.or([eb('part_key', 'in', lookFor), eb('part_alt', 'in', lookFor)]))
    .execute();
  const byKey = new Map<string, { key: string; alt: string | null; messageId: string }[]>();
  for (const p of parts) {
    for (const k of p.part_alt === null ? [p.part_key] : [p.part_key, p.part_alt]) {
      const list = byKey.get(k) ?? [];
      list.push({ key: p.part_key, alt: p.part_alt, messageId: p.message_id });
      byKey.set(k, list);
    }
  }
  const best = new Map<string, string>();
  for (const w of wanted) {
    let rank = Infinity;
    const candidates = [...(byKey.get(w.keys.key) ?? []), ...(w.keys.alt === null ? [] : (byKey.get(w.keys.alt) ?? []))];
    for (const c of candidates) {
      const r = matchRank(c, w.keys);
      if (r !== null && r < rank) {
        rank = r;
        best.set(w.id, c.messageId);
      }
    }
  }
  const messages = new Map((await messagesByIds(ctx.store.db, [...new Set(best.values())])).map((m) => [m.id, m]));
  const out = new Map<string, MessagesTable>();
  for (const [id, messageId] of best) {
    const m = messages.get(messageId);
    if (m) out.set(id, m);
  }
  return out;
}

/** How a receipt is found among the looked-up messages (see findMessages). */
function receiptKey(report: DeliveryReport): string {
  return report.byMessageId ? report.carrierMessageId : `carrier:${report.carrierMessageId}`;
}

function receiptChange(report: DeliveryReport): StatusChange {
  return { to: report.status, at: report.at, errorCode: report.errorCode, errorMessage: report.errorMessage };
}

export async function applyReceiptJobs(ctx: Context, jobs: JobsTable[]): Promise<{ applied: number; dropped: number }> {
  // In arrival order (job ids count up), whatever order the claim returned them in (PostgreSQL's
  // UPDATE … RETURNING keeps none): for a multi-part message the first final receipt decides.
  const reports = [...jobs].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map((job) => ({ job, report: JSON.parse(job.payload ?? '{}') as DeliveryReport }));
  const found = await findMessages(ctx, reports);
  const now = ctx.clock();
  const followUps: NewJob[] = [];
  const done: string[] = [];
  let applied = 0;
  let dropped = 0;
  // Parts of one message report under different ids: keep each message's latest state by its id.
  const latest = new Map<string, MessagesTable>();
  // A fast SMSC reports before the submit's outcome is committed: put those back in one statement.
  const early: string[] = [];
  await ctx.store.db.transaction().execute(async (trx) => {
    // Most messages have one receipt in a batch: those are applied together, in one UPDATE per
    // pair of statuses. A message's further receipts in the same batch follow one by one, each
    // on the state the earlier ones left (applying a change never makes a message pending again,
    // so which receipts are early does not depend on that order).
    const first: { report: DeliveryReport; message: MessagesTable }[] = [];
    const further: DeliveryReport[] = [];
    for (const { job, report } of reports) {
      const message = found.get(receiptKey(report));
      if ((!message || message.status === 'pending') && job.attempts < EARLY_RECEIPT_MAX_ATTEMPTS) {
        early.push(job.id);
        continue;
      }
      done.push(job.id);
      if (!message) {
        dropped++;
        ctx.log.warn({ carrierMessageId: report.carrierMessageId }, 'receipt for an unknown message dropped');
        continue;
      }
      if (latest.has(message.id)) {
        further.push(report);
        continue;
      }
      latest.set(message.id, message);
      first.push({ report, message });
    }
    const nexts = await applyStatusChanges(
      trx,
      ctx.store.dialect,
      first.map(({ report, message }) => ({ message, change: receiptChange(report) })),
      now,
      followUps,
    );
    first.forEach(({ report, message }, i) => {
      const next = nexts[i];
      if (!next) return;
      applied++;
      found.set(receiptKey(report), next);
      latest.set(message.id, next);
    });
    for (const report of further) {
      const lookedUp = found.get(receiptKey(report))!;
      const next = await applyStatusChange(trx, latest.get(lookedUp.id) ?? lookedUp, receiptChange(report), now, followUps);
      if (next) {
        applied++;
        // Several parts of one message may report: the first final one decides.
        found.set(receiptKey(report), next);
        latest.set(next.id, next);
      }
    }
    await releaseJobs(trx, early, now + EARLY_RECEIPT_RETRY_MS);
    await deleteJobs(trx, done);
    await enqueueFollowUps(trx, followUps, now);
  });
  if (followUps.length > 0) ctx.wake('webhook');
  return { applied, dropped };
}
