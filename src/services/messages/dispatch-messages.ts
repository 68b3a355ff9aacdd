/**
 * Hands claimed dispatch jobs to the carrier and records each outcome. A message is submitted
 * only while it is `pending`. If the database cannot take the outcomes when the carrier has given
 * them (PostgreSQL restarting, a full disk), the `Dispatcher` of the loop keeps them in memory and
 * records them before it claims anything else, so the process that submitted a message never
 * submits it again. Only if the process dies first does the job's lease run out and the message
 * go out again (at-least-once, with Pigeon's message id passed to the carrier so it can drop the
 * repeat).
 */
import type { Carrier, OutboundMessage, SubmitOutcome } from '../../carriers/carrier.ts';
import { carrierIdKeys } from '../../carriers/carrier-ids.ts';
import type { CarrierPartsTable, JobsTable, MessagesTable } from '../../store/database.ts';
import { deferJobs, deleteJobs, extendLeases, holdJob, renewLeases, rescheduleJob, type NewJob } from '../../store/repositories/jobs.repository.ts';
import { holdMessage, messagesByIds, recordMessageRoutes, type MessageRouteRecord } from '../../store/repositories/messages.repository.ts';
import { holdsOf } from './quiet-hours-hold.ts';
import { insertCarrierParts } from '../../store/repositories/carrier-receipts.repository.ts';
import { applyStatusChange, applyStatusChanges, enqueueFollowUps } from './message-status-changes.ts';
import type { Context } from '../context.ts';
import type { Store } from '../../store/connect.ts';
import { carrierSubmits } from '../../metrics.ts';
import { sendTimeRefusals, type SendTimeRefusal } from './send-time-checks.ts';
import { isStoreUnavailable } from '../availability.ts';
import { MASK_CHARACTER } from '../../domain/verify.ts';
import { verifyTexts } from '../../store/repositories/verify.repository.ts';

export interface DispatchSummary {
  sent: number;
  failed: number;
  retried: number;
  /** Jobs of scheduled messages not released yet, put back for a moment. */
  waiting: number;
  /** Jobs of marketing messages outside their quiet-hours window, put back to its opening. */
  held: number;
  skipped: number;
}

/**
 * How long a dispatch job staged for a scheduled message waits again when it comes due before the
 * scheduler released its message (a large release runs for a second or two).
 */
const UNRELEASED_RECHECK_MS = 1000;

function outbound(m: MessagesTable, carrierText?: string): OutboundMessage {
  const message: OutboundMessage = { id: m.id, recipient: m.recipient, sender: m.sender, body: carrierText ?? m.body, encoding: m.encoding, segments: m.segments };
  if (m.expires_at !== null) message.validUntil = Number(m.expires_at);
  if (m.routes_tried) message.triedRoutes = m.routes_tried.split(',');
  return message;
}

/**
 * What to record about the routes of a message after an outcome: the route that took it with the
 * carrier's charge fixed now (a later change of the route's cost leaves it), or the routes it has
 * tried, which it is not sent to again. Null when there is nothing new.
 */
function routeRecord(m: MessagesTable, outcome: SubmitOutcome): MessageRouteRecord | null {
  const tried = outcome.triedRoutes && outcome.triedRoutes.length > 0 ? outcome.triedRoutes.join(',') : null;
  if (outcome.kind === 'accepted' && outcome.route) {
    const cost = outcome.route.costPerSegment === null ? null : outcome.route.costPerSegment * m.segments;
    return { id: m.id, route: outcome.route.name, route_cost: cost, routes_tried: tried };
  }
  if (outcome.kind !== 'accepted' && tried !== null && tried !== (m.routes_tried ?? null)) return { id: m.id, route: null, route_cost: null, routes_tried: tried };
  return null;
}

/**
 * The texts of verification messages, whose stored body has the code masked (DECISIONS.md §14):
 * read at every dispatch attempt, so a retried or re-leased job sends the same code. Only batches
 * with a masked body pay for the lookup.
 */
async function carrierTexts(ctx: Context, messages: MessagesTable[]): Promise<Map<string, string>> {
  const masked = messages.filter((m) => m.body.includes(MASK_CHARACTER)).map((m) => m.id);
  return masked.length > 0 ? verifyTexts(ctx.store.db, masked) : new Map();
}

/** The outcome of a message whose validity period ended before it could be handed over. */
const EXPIRED: SubmitOutcome = { kind: 'rejected', errorCode: 'expired', errorMessage: 'The validity period ended before the message could be dispatched.' };

export async function dispatchJobs(ctx: Context, carrier: Carrier, jobs: JobsTable[]): Promise<DispatchSummary> {
  return (await submitJobs(ctx, carrier, jobs))();
}

/**
 * Submits the jobs' messages and returns the recording of their outcomes, which may be run again
 * until it succeeds: each run builds its writes afresh, and a message already moved by an earlier
 * run that did commit (its answer lost with the connection) is not moved, refunded or followed up
 * again, since every status change is guarded by the status it leaves.
 */
async function submitJobs(ctx: Context, carrier: Carrier, jobs: JobsTable[]): Promise<() => Promise<DispatchSummary>> {
  const messages = new Map((await messagesByIds(ctx.store.db, jobs.map((j) => j.ref))).map((m) => [m.id, m]));
  const started = ctx.clock();
  const expired = (w: { message: MessagesTable }) => w.message.expires_at !== null && Number(w.message.expires_at) <= started;
  const pending = jobs.flatMap((job) => {
    const message = messages.get(job.ref);
    return message && message.status === 'pending' ? [{ job, message }] : [];
  });
  // A marketing message outside its recipient's quiet-hours window is never handed over (a
  // scheduled one released at night, or any whose job came due early): it waits for the window's
  // next opening, its job put back to its release time (quiet-hours-hold.ts). One whose validity
  // period has ended fails below instead.
  const holds = await holdsOf(ctx.store.db, pending.filter((w) => !expired(w)).map((w) => w.message), started);
  const held = pending.filter((w) => holds.has(w.message.id));
  const work = held.length === 0 ? pending : pending.filter((w) => !holds.has(w.message.id));
  // A job staged ahead of its message's release (scheduled-messages.repository.ts) stays: the
  // release keeps it rather than writing another.
  const unreleased = jobs.filter((j) => messages.get(j.ref)?.status === 'scheduled').map((j) => j.id);
  // A message past its validity period is not handed over: it fails `expired`, refunded. One
  // refused since acceptance (opted out, suspended, sender withdrawn) fails and is refunded too.
  const live = work.filter((w) => !expired(w));
  const refusals = live.length > 0 ? await sendTimeRefusals(ctx.store.db, live.map((w) => w.message)) : new Map<string, SendTimeRefusal>();
  const toSubmit = live.filter((w) => !refusals.has(w.message.id));
  const texts = await carrierTexts(ctx, toSubmit.map((w) => w.message));
  const submitted = toSubmit.length > 0 ? await carrier.submit(toSubmit.map((w) => outbound(w.message, texts.get(w.message.id)))) : [];
  const submittedOutcome = new Map(toSubmit.map((w, i) => [w.message.id, submitted[i]!]));
  const outcomes: SubmitOutcome[] = work.map((w) => {
    if (expired(w)) return EXPIRED;
    const refusal = refusals.get(w.message.id);
    return refusal ? { kind: 'rejected', errorCode: refusal.code, errorMessage: refusal.message } : submittedOutcome.get(w.message.id)!;
  });
  const now = ctx.clock();
  const kept = new Set([...work.map((w) => w.job.id), ...unreleased, ...held.map((w) => w.job.id)]);
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
  return async () => {
    const summary: DispatchSummary = { sent: 0, failed: 0, retried: 0, waiting: unreleased.length, held: held.length, skipped: jobs.length - work.length - unreleased.length - held.length };
    const followUps: NewJob[] = [];
    const done: string[] = jobs.filter((j) => !kept.has(j.id)).map((j) => j.id);
    const parts: CarrierPartsTable[] = [];
    const routes: MessageRouteRecord[] = [];
    // Everything that needs no database is worked out before the transaction: it holds SQLite's
    // one write lock, which the API process waits for.
    const accepted: { i: number; outcome: Extract<SubmitOutcome, { kind: 'accepted' }> }[] = [];
    const rejected: { i: number; outcome: Extract<SubmitOutcome, { kind: 'rejected' }> }[] = [];
    const retries: { id: string; runAt: number }[] = [];
    for (const i of order) {
      const { job } = work[i]!;
      const outcome = outcomes[i]!;
      const record = routeRecord(work[i]!.message, outcome);
      if (record && outcome.kind !== 'accepted') routes.push(record);
      if (outcome.kind === 'retry') {
        retries.push({ id: job.id, runAt: now + outcome.delayMs });
        continue;
      }
      done.push(job.id);
      if (outcome.kind === 'accepted') accepted.push({ i, outcome });
      else rejected.push({ i, outcome });
    }
    // The accepted ones (most of a batch) move to `sent` together, the route that took each
    // written by the same UPDATE rather than a second one.
    const toSent = accepted.map(({ i, outcome }) => {
      const record = routeRecord(work[i]!.message, outcome);
      return { message: work[i]!.message, change: { to: 'sent' as const, at: now, carrierMessageId: outcome.carrierMessageId, ...(record ? { routes: record } : {}) } };
    });
    const partsOf = accepted.map(({ i, outcome }) =>
      (outcome.carrierPartIds ?? []).map((carrierId, partIndex): CarrierPartsTable => {
        const { key, alt } = carrierIdKeys(carrierId);
        return { message_id: work[i]!.message.id, part_index: partIndex, carrier_id: carrierId, part_key: key, part_alt: alt, created_at: now };
      }),
    );
    await ctx.store.db.transaction().execute(async (trx) => {
      for (const { id, runAt } of retries) await rescheduleJob(trx, id, runAt);
      const sent = await applyStatusChanges(trx, toSent, now, followUps);
      accepted.forEach(({ i, outcome }, k) => {
        if (!sent[k]) return;
        summary.sent++;
        parts.push(...partsOf[k]!);
        if (outcome.scheduledReport) {
          const { dueAt, ...report } = outcome.scheduledReport;
          followUps.push({ queue: 'receipt', ref: work[i]!.message.id, payload: report, runAt: dueAt });
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
      await recordMessageRoutes(trx, routes);
      await deleteJobs(trx, done);
      await deferJobs(trx, unreleased, now + UNRELEASED_RECHECK_MS);
      for (const { job, message } of held) {
        const hold = holds.get(message.id)!;
        await holdMessage(trx, message.id, hold.heldUntil);
        await holdJob(trx, job.id, hold.releaseAt);
      }
      await enqueueFollowUps(trx, followUps, now);
    });
    summary.retried = retries.length;
    if (followUps.some((j) => j.queue === 'webhook')) ctx.wake('webhook');
    carrierSubmits.inc({ carrier: carrier.name, outcome: 'accepted' }, summary.sent);
    carrierSubmits.inc({ carrier: carrier.name, outcome: 'rejected' }, summary.failed);
    carrierSubmits.inc({ carrier: carrier.name, outcome: 'retry' }, summary.retried);
    return summary;
  };
}

const heldInProcess = new WeakMap<Store, Set<string>>();

/** Per store, the dispatch batches of this process handed to the carrier and not yet recorded. */
const inFlight = new WeakMap<Store, Set<Promise<unknown>>>();

/**
 * The dispatch batches of this process that are with the carrier or being recorded, each settling
 * once its outcomes are committed (or given up): a receipt that arrives meanwhile is most likely
 * for one of their messages, still `pending` until then (record-delivery-reports.ts waits for them).
 */
export function dispatchesInFlight(store: Store): Promise<unknown>[] {
  const set = inFlight.get(store);
  return set ? [...set] : [];
}

function trackInFlight<T>(store: Store, work: Promise<T>): Promise<T> {
  let set = inFlight.get(store);
  if (!set) inFlight.set(store, (set = new Set()));
  const tracked = work.then(
    () => undefined,
    () => undefined,
  );
  set.add(tracked);
  void tracked.then(() => set.delete(tracked));
  return work;
}

/**
 * After the store comes back from an outage, how long a process leaves alone the jobs whose lease
 * ran out meanwhile (claimed before: `attempts` > 1): another process may hold their outcomes in
 * memory and record them at its next step, which comes within the longest back-off of a worker
 * loop (5 s). Only a job still there after this is one whose process died, and is submitted again.
 */
export const RECLAIM_GRACE_MS = 15_000;

/** Outcomes the carrier gave that the database has not taken yet. */
interface Held {
  jobIds: string[];
  record: () => Promise<DispatchSummary>;
  since: number;
  /** When the jobs' lease, as last written, runs out. */
  leaseUntil: number;
}

/**
 * Keeps the lease of a batch in hand while its loop submits it and records the outcomes: renewed
 * each half lease, so a batch slower than its lease (a throttled route, a loaded database) is not
 * taken by another worker, whose read would still find its messages `pending`, and submitted
 * twice. Only a process that dies (or stops its event loop for half a lease) lets the lease run out.
 * A renewal counts as a claim for `oldestDispatchClaim` (carrier-receipts.repository.ts), which
 * then dates the batch's submits from the renewal: a receipt the carrier sends for one of them
 * before it is renewed can be matched by a converted id alone, as with a claim that was never
 * renewed once its submits are recorded.
 */
class LeaseKeeper {
  #until: number;
  #timer: NodeJS.Timeout;
  #renewal: Promise<void> = Promise.resolve();
  #stopped = false;

  constructor(
    private readonly ctx: Context,
    private readonly jobIds: string[],
    until: number,
    private readonly leaseMs: number,
  ) {
    this.#until = until;
    this.#timer = this.#schedule();
  }

  #schedule(): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.#renewal = this.#renew();
    }, this.leaseMs / 2);
    timer.unref();
    return timer;
  }

  async #renew(): Promise<void> {
    const until = this.ctx.clock() + this.leaseMs;
    try {
      await renewLeases(this.ctx.store.db, this.jobIds, this.#until, until);
      this.#until = until;
    } catch (err) {
      // The database is away: the jobs keep the lease last written; the next renewal tries again.
      this.ctx.log.warn({ err, jobs: this.jobIds.length }, 'a dispatch lease could not be renewed');
    }
    if (!this.#stopped) this.#timer = this.#schedule();
  }

  /** Stops renewing (after any renewal under way) and says when the lease last written ends. */
  async stop(): Promise<number> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#renewal;
    return this.#until;
  }
}

/**
 * One dispatch loop's hands. When the outcomes of a batch cannot be recorded because the store is
 * unavailable, they stay here (one batch at most: nothing new is claimed meanwhile) and `settle`,
 * run before each claim, records them as soon as the store takes writes again. Until then it
 * pushes the jobs' lease forward whenever the database lets it, so that no other worker takes a
 * job whose message the carrier already has. Any other failure of the recording is not waited
 * out: the outcomes are dropped and the jobs come back when their lease ends, as before.
 */
export class Dispatcher {
  #held: Held | null = null;
  /** The jobs every dispatcher of this process holds outcomes for. */
  readonly #heldHere: Set<string>;

  constructor(
    private readonly ctx: Context,
    private readonly carrier: Carrier,
    private readonly leaseMs: number,
  ) {
    let set = heldInProcess.get(ctx.store);
    if (!set) heldInProcess.set(ctx.store, (set = new Set()));
    this.#heldHere = set;
  }

  /** How many jobs' outcomes wait in memory. */
  get holding(): number {
    return this.#held?.jobIds.length ?? 0;
  }

  /** Submits claimed jobs and records their outcomes, or keeps the outcomes if the store cannot take them. */
  async dispatch(claimed: JobsTable[], claimedAt: number): Promise<DispatchSummary> {
    // A job whose lease ran out while another loop of this process held its outcome (a long
    // outage) is that loop's to record, not to submit again; this claim has renewed its lease.
    let jobs = this.#heldHere.size === 0 ? claimed : claimed.filter((j) => !this.#heldHere.has(j.id));
    // Jobs another process may hold the outcomes of, just after an outage: theirs to record first.
    const recoveredAt = this.ctx.store.condition.recoveredAt;
    const graceLeft = recoveredAt === null ? 0 : recoveredAt + RECLAIM_GRACE_MS - Date.now();
    if (graceLeft > 0) {
      const reclaimed = jobs.filter((j) => j.attempts > 1);
      if (reclaimed.length > 0) {
        await deferJobs(this.ctx.store.db, reclaimed.map((j) => j.id), this.ctx.clock() + graceLeft);
        jobs = jobs.filter((j) => j.attempts <= 1);
      }
    }
    if (jobs.length === 0) return { sent: 0, failed: 0, retried: 0, waiting: 0, held: 0, skipped: claimed.length };
    let record: (() => Promise<DispatchSummary>) | null = null;
    const lease = new LeaseKeeper(this.ctx, jobs.map((j) => j.id), claimedAt + this.leaseMs, this.leaseMs);
    const submitAndRecord = submitJobs(this.ctx, this.carrier, jobs).then((r) => (record = r)());
    try {
      return await trackInFlight(this.ctx.store, submitAndRecord);
    } catch (err) {
      if (record === null) throw err;
      if (!isStoreUnavailable(this.ctx.store, err)) throw err;
      this.#held = { jobIds: jobs.map((j) => j.id), record, since: this.ctx.clock(), leaseUntil: await lease.stop() };
      for (const job of jobs) this.#heldHere.add(job.id);
      this.ctx.log.warn({ jobs: jobs.length }, 'dispatch outcomes kept in memory until the database takes them');
      throw err;
    } finally {
      await lease.stop();
    }
  }

  /** Records the outcomes kept in hand, if any; throws (and keeps them) while the store is unavailable. */
  async settle(): Promise<void> {
    const held = this.#held;
    if (!held) return;
    try {
      await held.record();
    } catch (err) {
      if (!isStoreUnavailable(this.ctx.store, err)) {
        this.#release(held);
        this.ctx.log.error({ err, jobs: held.jobIds.length }, 'dispatch outcomes could not be recorded; their jobs come back when the lease ends');
        throw err;
      }
      await this.#keepLease(held);
      throw err;
    }
    this.#release(held);
    this.ctx.log.info({ jobs: held.jobIds.length, held_ms: this.ctx.clock() - held.since }, 'dispatch outcomes kept in memory are recorded');
  }

  #release(held: Held): void {
    this.#held = null;
    for (const id of held.jobIds) this.#heldHere.delete(id);
  }

  /** Pushes the lease a whole lease ahead once half of it is gone, if the database lets it. */
  async #keepLease(held: Held): Promise<void> {
    const now = this.ctx.clock();
    if (held.leaseUntil - now > this.leaseMs / 2) return;
    try {
      await extendLeases(this.ctx.store.db, held.jobIds, now + this.leaseMs);
      held.leaseUntil = now + this.leaseMs;
    } catch {
      // Unavailable still: the next settle tries again.
    }
  }
}
