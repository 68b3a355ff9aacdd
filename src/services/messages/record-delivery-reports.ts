/**
 * Carrier receipts are made durable before the carrier is acknowledged: applied at once where
 * they can be (SQLite), otherwise stored as `receipt` jobs that the receipt worker applies in
 * batches (see `recordDeliveryReport`).
 */
import type { DeliveryReport } from '../../carriers/carrier.ts';
import { carrierIdKeys, matchRank, rankOfSpelling, SPELLING_OF_RANK, type ReceiptIdSpelling } from '../../carriers/carrier-ids.ts';
import type { Transaction } from 'kysely';
import type { Database, JobsTable, MessagesTable } from '../../store/database.ts';
import type { Executor } from '../../store/connect.ts';
import { deleteJobs, enqueueJobs, hasDueJob, lockDueJobs, releaseJobs, retryJobsAt, type NewJob } from '../../store/repositories/jobs.repository.ts';
import { carrierPartsByKeys, messagesByCarrierIds, oldestDispatchClaim, routeIdSpellings, saveRouteIdSpelling } from '../../store/repositories/carrier-receipts.repository.ts';
import { messagesByIds } from '../../store/repositories/messages.repository.ts';
import { applyStatusChange, applyStatusChanges, enqueueFollowUps, type StatusChange } from './message-status-changes.ts';
import type { Context } from '../context.ts';
import { dispatchesInFlight } from './dispatch-messages.ts';
import { isStoreUnavailable } from '../availability.ts';
import { newId } from '../../util/ids.ts';

/**
 * A receipt can overtake the commit of the submit it reports on (SMPP answers deliver_sm on
 * another PDU than submit_sm_resp). Such a receipt is retried for about 30 s before it is dropped;
 * one that matches a message only through base conversion is retried the same way while submits
 * made before it arrived may still commit, then applied.
 */
const EARLY_RECEIPT_RETRY_MS = 1000;
const EARLY_RECEIPT_MAX_ATTEMPTS = 30;

/**
 * Receipts that arrive together (an SMSC sends thousands a second) are recorded together: each
 * caller still waits for the commit that holds its receipt.
 */
interface PendingReceipts {
  reports: DeliveryReport[];
  waiters: { resolve: () => void; reject: (err: unknown) => void }[];
}
const pendingReceipts = new WeakMap<Context, PendingReceipts>();
/** Per context, receipts waiting for this process's dispatch batches in flight (see below). */
const waitingReceipts = new WeakMap<Context, PendingReceipts>();

/**
 * How long receipts for messages still `pending` wait for this process's dispatch batches in
 * flight, whose outcomes make them `sent`: longer than a batch takes on a live link. Past it they
 * are stored as jobs, as any early receipt.
 */
const IN_FLIGHT_WAIT_MS = 1000;

/**
 * Makes a receipt durable; call before acknowledging it to the carrier.
 *
 * On SQLite a receipt whose message is known is applied at once, in the transaction that makes it
 * durable, rather than stored as a job that the receipt worker then leases, applies and deletes:
 * those three writes of a row and its two index entries, and the worker's own commits, were most
 * of what the delivery process held SQLite's one write lock for. A receipt usually overtakes the
 * commit of its submit's outcome (the SMSC answers the submit and reports at once, while the
 * batch's other submits are still out); such a receipt, whose message is still `pending`, waits
 * for the dispatch batches this process has in flight and is then applied, and only what still
 * cannot be applied (an unknown message, a match through base conversion while submits may be in
 * flight) is stored as a job for the worker. Only those wait: a receipt that can be applied is
 * acknowledged without waiting for any dispatch, so an SMSC's window of unacknowledged receipts
 * is not held by the dispatch loop.
 *
 * On PostgreSQL, where the worker claims and applies a batch in one transaction under row locks
 * and each statement is a round trip, the receipt is only stored, so the acknowledgement waits
 * for one statement.
 */
export function recordDeliveryReport(ctx: Context, report: DeliveryReport): Promise<void> {
  let batch = pendingReceipts.get(ctx);
  if (!batch) {
    const fresh: PendingReceipts = { reports: [], waiters: [] };
    batch = fresh;
    pendingReceipts.set(ctx, fresh);
    setImmediate(() => {
      pendingReceipts.delete(ctx);
      if (ctx.store.dialect !== 'sqlite') return settle(fresh, storeReceipts(ctx, fresh.reports));
      const inFlight = dispatchesInFlight(ctx.store);
      if (inFlight.length === 0) return settle(fresh, applyOnArrival(ctx, fresh.reports, true));
      void applyOnArrival(ctx, fresh.reports, false).then(
        (early) => {
          fresh.waiters.forEach((w, i) => (early.has(i) ? waitForDispatch(ctx, fresh.reports[i]!, w, inFlight) : w.resolve()));
        },
        (err: unknown) => fresh.waiters.forEach((w) => w.reject(err)),
      );
    });
  }
  batch.reports.push(report);
  return new Promise((resolve, reject) => batch.waiters.push({ resolve, reject }));
}

function settle(batch: PendingReceipts, work: Promise<unknown>): void {
  work.then(
    () => batch.waiters.forEach((w) => w.resolve()),
    (err: unknown) => batch.waiters.forEach((w) => w.reject(err)),
  );
}

/** Applies the receipt once the dispatch batches in flight are recorded, or stores it as a job. */
function waitForDispatch(ctx: Context, report: DeliveryReport, waiter: PendingReceipts['waiters'][number], inFlight: Promise<unknown>[]): void {
  let batch = waitingReceipts.get(ctx);
  if (!batch) {
    const fresh: PendingReceipts = { reports: [], waiters: [] };
    batch = fresh;
    waitingReceipts.set(ctx, fresh);
    // Early receipts of later arrivals join this batch while it waits: one transaction for all.
    void settledWithin(inFlight, IN_FLIGHT_WAIT_MS).then(() => {
      waitingReceipts.delete(ctx);
      settle(fresh, applyOnArrival(ctx, fresh.reports, true));
    });
  }
  batch.reports.push(report);
  batch.waiters.push(waiter);
}

function settledWithin(work: Promise<unknown>[], ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([Promise.allSettled(work), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]).then(() => clearTimeout(timer));
}

/** Stores receipts as jobs for the receipt worker. */
async function storeReceipts(ctx: Context, reports: DeliveryReport[]): Promise<void> {
  const now = ctx.clock();
  await enqueueJobs(ctx.store.db, reports.map((r) => receiptJob(r, now)), now);
  ctx.wake('receipt');
}

function receiptJob(report: DeliveryReport, now: number): NewJob {
  return { queue: 'receipt', ref: report.carrierMessageId, payload: report, runAt: now };
}

/**
 * Applies arriving receipts where they can be, in one transaction; those that cannot be applied
 * yet are stored as jobs in it (`store`), or left out. Returns the indexes of the ones left out.
 */
async function applyOnArrival(ctx: Context, reports: DeliveryReport[], store: boolean): Promise<Set<number>> {
  const now = ctx.clock();
  // As the jobs they would have been, in arrival order, this being their first attempt.
  const arrived: JobsTable[] = reports.map((r) => ({ id: newId('job', now), queue: 'receipt', account_id: null, ref: r.carrierMessageId, payload: JSON.stringify(r), run_at: now, attempts: 1, created_at: now }));
  const index = new Map(arrived.map((job, i) => [job.id, i]));
  let result: { followUps: number; early: string[] };
  try {
    result = await applyReceipts(ctx, ctx.store.db, arrived, (work) => ctx.store.db.transaction().execute(work), {
      putBack: async (trx, ids) => {
        // Due at once, as an arriving receipt's job always was.
        if (store && ids.length > 0) await enqueueJobs(trx, ids.map((id) => receiptJob(reports[index.get(id)!]!, now)), now);
      },
      finish: async () => {},
      writesEarly: store,
    });
  } catch (err) {
    if (isStoreUnavailable(ctx.store, err)) throw err;
    // Whatever went wrong applying them, the receipts are still kept: the worker retries them.
    ctx.log.warn({ err, receipts: reports.length }, 'receipts could not be applied on arrival; stored for the receipt worker');
    await storeReceipts(ctx, reports);
    return new Set();
  }
  if (store && result.early.length > 0) ctx.wake('receipt');
  if (result.followUps > 0) ctx.wake('webhook');
  return store ? new Set() : new Set(result.early.map((id) => index.get(id)!));
}

/** Message ids whose parts match a receipt's id: exactly (index 0), or through base conversion (1, 2; see matchRank). */
type Candidates = [string | undefined, string | undefined, string | undefined];

/** Candidates for each id; `rows` collects the messages read on the way. */
async function candidatesFor(ctx: Context, db: Executor, carrierIds: string[], alwaysConvert: Set<string>, rows: Map<string, MessagesTable>): Promise<Map<string, Candidates>> {
  const out = new Map<string, Candidates>(carrierIds.map((id) => [id, [undefined, undefined, undefined]]));
  for (const m of await messagesByCarrierIds(db, carrierIds)) {
    rows.set(m.id, m);
    out.get(m.carrier_message_id!)![0] ??= m.id;
  }
  const wanted = carrierIds.filter((id) => out.get(id)![0] === undefined || alwaysConvert.has(id)).map((id) => ({ id, keys: carrierIdKeys(id) }));
  if (wanted.length === 0) return out;
  const lookFor = [...new Set(wanted.flatMap((w) => (w.keys.alt === null ? [w.keys.key] : [w.keys.key, w.keys.alt])))];
  const byKey = new Map<string, { key: string; alt: string | null; messageId: string }[]>();
  for (const p of await carrierPartsByKeys(db, lookFor)) {
    for (const k of p.part_alt === null ? [p.part_key] : [p.part_key, p.part_alt]) {
      const list = byKey.get(k) ?? [];
      list.push({ key: p.part_key, alt: p.part_alt, messageId: p.message_id });
      byKey.set(k, list);
    }
  }
  for (const w of wanted) {
    const candidates = out.get(w.id)!;
    for (const c of [...(byKey.get(w.keys.key) ?? []), ...(w.keys.alt === null ? [] : (byKey.get(w.keys.alt) ?? []))]) {
      const rank = matchRank(c, w.keys);
      if (rank !== null) candidates[rank] ??= c.messageId;
    }
  }
  return out;
}

/** What a receipt's id designates, given what its route's SMSC is known to do with ids. */
interface Resolution {
  messageId: string | null;
  /** Found only through base conversion, on a route not known to convert: wait for submits in flight. */
  provisional: 1 | 2 | null;
  /** An exact match on a route thought to convert: it no longer does. */
  unlearn: boolean;
}

function resolve(candidates: Candidates | undefined, spelling: ReceiptIdSpelling | undefined): Resolution {
  if (!candidates) return { messageId: null, provisional: null, unlearn: false };
  const learned = rankOfSpelling(spelling);
  if (learned !== null && candidates[learned]) return { messageId: candidates[learned]!, provisional: null, unlearn: false };
  if (candidates[0]) return { messageId: candidates[0], provisional: null, unlearn: learned !== null };
  const rank = candidates[1] ? 1 : candidates[2] ? 2 : null;
  return { messageId: rank === null ? null : candidates[rank]!, provisional: rank, unlearn: false };
}

function receiptChange(report: DeliveryReport): StatusChange {
  return { to: report.status, at: report.at, errorCode: report.errorCode, errorMessage: report.errorMessage };
}

/** Applies receipt jobs claimed with a lease (`claimJobs`): the reads first, then one transaction. */
export async function applyReceiptJobs(ctx: Context, jobs: JobsTable[]): Promise<{ applied: number; dropped: number }> {
  const { applied, dropped, followUps } = await applyReceipts(ctx, ctx.store.db, jobs, (work) => ctx.store.db.transaction().execute(work), { putBack: releaseJobs, finish: deleteJobs, writesEarly: true });
  if (followUps > 0) ctx.wake('webhook');
  return { applied, dropped };
}

/**
 * PostgreSQL: claims up to `limit` due receipts and applies them in one transaction, the claim a
 * row lock rather than a lease (`lockDueJobs`): a receipt is database work only, so nothing is
 * gained by committing the claim first, and it saves a row version of every job and a commit per
 * batch. Returns how many were claimed.
 */
export async function claimAndApplyReceipts(ctx: Context, limit: number): Promise<number> {
  if (!(await hasDueJob(ctx.store.db, 'receipt', ctx.clock()))) return 0;
  const { claimed, followUps } = await ctx.store.db.transaction().execute(async (trx) => {
    const jobs = await lockDueJobs(trx, 'receipt', limit, ctx.clock());
    if (jobs.length === 0) return { claimed: 0, followUps: 0 };
    // `attempts` counts claims, this one included, as a lease claim would have counted it.
    const result = await applyReceipts(
      ctx,
      trx,
      jobs.map((j) => ({ ...j, attempts: j.attempts + 1 })),
      (work) => work(trx),
      { putBack: retryJobsAt, finish: deleteJobs, writesEarly: true },
    );
    return { claimed: jobs.length, followUps: result.followUps };
  });
  // After the commit: woken sooner, the webhook worker would not see the events yet.
  if (followUps > 0) ctx.wake('webhook');
  return claimed;
}

async function applyReceipts(
  ctx: Context,
  db: Executor,
  jobs: JobsTable[],
  write: (work: (trx: Transaction<Database>) => Promise<void>) => Promise<void>,
  /** `putBack` the receipts to try again at `runAt`; `finish` those done with. */
  jobs_: { putBack: (db: Executor, ids: string[], runAt: number) => Promise<void>; finish: (db: Executor, ids: string[]) => Promise<void>; writesEarly: boolean },
): Promise<{ applied: number; dropped: number; followUps: number; early: string[] }> {
  // In arrival order (job ids count up), whatever order the claim returned them in (PostgreSQL's
  // UPDATE … RETURNING keeps none): for a multi-part message the first final receipt decides.
  const reports = [...jobs].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map((job) => ({ job, report: JSON.parse(job.payload ?? '{}') as DeliveryReport }));
  const now = ctx.clock();
  const byCarrier = reports.filter((r) => !r.report.byMessageId);
  const routes = [...new Set(byCarrier.flatMap((r) => (r.report.route === undefined ? [] : [r.report.route])))];
  const spellings = await routeIdSpellings(db, routes);
  // On a route known to convert ids, a converted match beats an exact one: look for both.
  const alwaysConvert = new Set(byCarrier.filter((r) => rankOfSpelling(spellings.get(r.report.route ?? '')) !== null).map((r) => r.report.carrierMessageId));
  const found = new Map<string, MessagesTable>();
  const candidates =
    byCarrier.length > 0 ? await candidatesFor(ctx, db, [...new Set(byCarrier.map((r) => r.report.carrierMessageId))], alwaysConvert, found) : new Map<string, Candidates>();
  const resolved = reports.map(({ report }): Resolution =>
    report.byMessageId ? { messageId: report.carrierMessageId, provisional: null, unlearn: false } : resolve(candidates.get(report.carrierMessageId), spellings.get(report.route ?? '')),
  );
  // A converted match is provisional while a submit made before the receipt arrived may still be
  // committing: the receipt may be for that submit's message, whose id it names exactly.
  const oldestClaim = resolved.some((r) => r.provisional !== null) ? await oldestDispatchClaim(db, now, ctx.config.jobLeaseMs) : null;
  const unread = [...new Set(resolved.flatMap((r) => (r.messageId === null || found.has(r.messageId) ? [] : [r.messageId])))];
  for (const m of await messagesByIds(db, unread)) found.set(m.id, m);
  const followUps: NewJob[] = [];
  const done: string[] = [];
  const learnt = new Map<string, ReceiptIdSpelling>();
  let applied = 0;
  let dropped = 0;
  // Parts of one message report under different ids: keep each message's latest state by its id.
  const latest = new Map<string, MessagesTable>();
  // A fast SMSC reports before the submit's outcome is committed: put those back in one statement.
  const early: string[] = [];
  // Most messages have one receipt in a batch: those are applied together, in one UPDATE per
  // pair of statuses. A message's further receipts in the same batch follow one by one, each
  // on the state the earlier ones left (applying a change never makes a message pending again,
  // so which receipts are early does not depend on that order).
  const first: { report: DeliveryReport; message: MessagesTable }[] = [];
  const further: { report: DeliveryReport; message: MessagesTable }[] = [];
  reports.forEach(({ job, report }, i) => {
    const resolution = resolved[i]!;
    const message = resolution.messageId === null ? undefined : found.get(resolution.messageId);
    const retriesLeft = job.attempts < EARLY_RECEIPT_MAX_ATTEMPTS;
    const inFlight = resolution.provisional !== null && oldestClaim !== null && oldestClaim <= report.at;
    if (((!message || message.status === 'pending') && retriesLeft) || (inFlight && retriesLeft)) {
      early.push(job.id);
      return;
    }
    done.push(job.id);
    if (!message) {
      dropped++;
      ctx.log.warn({ carrierMessageId: report.carrierMessageId }, 'receipt for an unknown message dropped');
      return;
    }
    if (report.route !== undefined) {
      // Every submit made before the receipt came is committed and still only the other base
      // matches: this route's SMSC converts ids.
      if (resolution.provisional !== null && !inFlight) learnt.set(report.route, SPELLING_OF_RANK[resolution.provisional]);
      else if (resolution.unlearn) learnt.set(report.route, 'same');
    }
    if (latest.has(message.id)) {
      further.push({ report, message });
      return;
    }
    latest.set(message.id, message);
    first.push({ report, message });
  });
  // Nothing to write (every receipt early, and the caller keeps those itself): no transaction,
  // which would take SQLite's write lock for nothing.
  if (first.length === 0 && learnt.size === 0 && done.length === 0 && (early.length === 0 || !jobs_.writesEarly)) return { applied, dropped, followUps: 0, early };
  await write(async (trx) => {
    const nexts = await applyStatusChanges(
      trx,
      first.map(({ report, message }) => ({ message, change: receiptChange(report) })),
      now,
      followUps,
    );
    first.forEach(({ message }, i) => {
      const next = nexts[i];
      if (!next) return;
      applied++;
      latest.set(message.id, next);
    });
    for (const { report, message } of further) {
      // Several parts of one message may report: the first final one decides.
      const next = await applyStatusChange(trx, latest.get(message.id) ?? message, receiptChange(report), now, followUps);
      if (next) {
        applied++;
        latest.set(next.id, next);
      }
    }
    for (const [route, spelling] of learnt) {
      if (spellings.get(route) === spelling || (spelling === 'same' && !spellings.has(route))) continue;
      ctx.log.info({ route, receiptIds: spelling }, 'carrier route: receipt id spelling learned');
      await saveRouteIdSpelling(trx, route, spelling, now);
    }
    await jobs_.putBack(trx, early, now + EARLY_RECEIPT_RETRY_MS);
    await jobs_.finish(trx, done);
    await enqueueFollowUps(trx, followUps, now);
  });
  return { applied, dropped, followUps: followUps.length, early };
}
