/**
 * The retention purge (DECISIONS.md §13, docs/privacy.md): per account, the text of messages and
 * inbound messages older than its body days is removed, numbers older than its mask days are
 * masked, and messages older than its message days are deleted with their inbound messages,
 * webhook events and attempts, after being counted into the daily totals.
 *
 * It works in batches of `batchSize` rows, each in its own short transaction, and rests between
 * them six times as long as the batch took, so sends go on beside it (SQLite has one writer: a
 * long transaction would hold every send back for its whole length). Messages not in a final
 * state are never touched: the deletion passes them over until they are final; the text and
 * number purges, whose rows stay and which therefore keep a cursor per account, note them in
 * `retention_deferred` and come back to them once they are.
 */
import { isFinal } from '../../domain/message-status.ts';
import { maskNumber, rewritePayload } from '../../domain/redaction.ts';
import { cutoff, effectiveRetention, totalsOf, type RetentionDays } from '../../domain/retention.ts';
import type { RetentionCursorKind } from '../../store/database.ts';
import {
  accountsRetention,
  addDailyTotals,
  clearInboundBodies,
  clearMessageBodies,
  deferMessages,
  deferredMessages,
  deleteMessagesWithRecords,
  deleteEventsWithAttempts,
  deleteInboundWithEvents,
  eventPayloadsOf,
  forgetCarrierParts,
  inboundAfter,
  maskMessageRecipients,
  messagesAfter,
  oldAccountEventIds,
  oldInboundIds,
  retentionCursor,
  setInboundSenders,
  setRetentionCursor,
  undeferMessages,
  type AccountRetentionRow,
  type PurgeCandidate,
} from '../../store/repositories/retention.repository.ts';
import { setEventPayload } from '../../store/repositories/webhook-events.repository.ts';
import { retryingConflicts } from '../../store/retry-conflicts.ts';
import type { Context } from '../context.ts';
import { purgeAuditEvents } from '../audit/audit.ts';

export const PURGE_BATCH = 50;

/** What one run removed, as `pigeon retention run` prints it. */
export interface PurgeReport {
  messages_deleted: number;
  bodies_removed: number;
  numbers_masked: number;
  inbound_deleted: number;
  inbound_bodies_removed: number;
  inbound_numbers_masked: number;
  events_deleted: number;
  /** Audit log records older than RETENTION_AUDIT_DAYS (DECISIONS.md §15). */
  audit_events_deleted: number;
  /** Transactions the run took: each is at most one batch. */
  batches: number;
}

export interface PurgeOptions {
  batchSize?: number;
}

function emptyReport(): PurgeReport {
  return { messages_deleted: 0, bodies_removed: 0, numbers_masked: 0, inbound_deleted: 0, inbound_bodies_removed: 0, inbound_numbers_masked: 0, events_deleted: 0, audit_events_deleted: 0, batches: 0 };
}

/**
 * Rests after a batch for six times as long as it took, and at least MIN_REST_MS, so the purge
 * holds the write lock at most a seventh of the time, and still purges about 1,600 messages a
 * second (docs/performance.md, "Retention", against batches of 100 and twice). A send waiting for
 * it in another process gets its turn: SQLite's busy handler there sleeps 1, 2, 5, 10, 15, 20,
 * 25 ms... between tries, so a rest shorter than those sleeps is missed and the next batch takes
 * the lock again (measured in docs/performance.md, "Retention": send p99 in seconds with no rest
 * at all).
 */
const MIN_REST_MS = 20;
const REST_RATIO = 6;
const pause = (started: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(MIN_REST_MS, REST_RATIO * (performance.now() - started))));

export function retentionOf(ctx: Context, row: AccountRetentionRow): RetentionDays {
  return effectiveRetention(ctx.config.retention, {
    bodyDays: row.retention_body_days === null ? null : Number(row.retention_body_days),
    messageDays: row.retention_message_days === null ? null : Number(row.retention_message_days),
    maskNumbersDays: row.retention_mask_days === null ? null : Number(row.retention_mask_days),
  });
}

/** Everything due now, for every account; returns what it removed. */
export async function runPurge(ctx: Context, opts: PurgeOptions = {}): Promise<PurgeReport> {
  const size = opts.batchSize ?? PURGE_BATCH;
  const report = emptyReport();
  const now = ctx.clock();
  const accounts = await accountsRetention(ctx.store.db);
  const days = new Map(accounts.map((a) => [a.id, retentionOf(ctx, a)]));
  for (const account of accounts) {
    const d = days.get(account.id) as RetentionDays;
    await deleteMessages(ctx, account.id, cutoff(now, d.messageDays), size, report);
    await deleteInbound(ctx, account.id, cutoff(now, d.messageDays), size, report);
    await sweepKept(ctx, account.id, 'body', cutoff(now, d.bodyDays), size, report);
    await sweepInbound(ctx, account.id, 'inbound_body', cutoff(now, d.bodyDays), size, report);
    if (d.maskNumbersDays !== null) {
      await sweepKept(ctx, account.id, 'mask', cutoff(now, d.maskNumbersDays), size, report);
      await sweepInbound(ctx, account.id, 'inbound_mask', cutoff(now, d.maskNumbersDays), size, report);
    }
  }
  await sweepDeferred(ctx, now, days, size, report);
  // The audit log is the installation's, not an account's: one cutoff for every record.
  let started = performance.now();
  const audit = await purgeAuditEvents(ctx, size, async () => {
    await pause(started);
    started = performance.now();
  });
  report.audit_events_deleted = audit.removed;
  report.batches += audit.batches;
  return report;
}

function total(r: PurgeReport): number {
  return r.messages_deleted + r.bodies_removed + r.numbers_masked + r.inbound_deleted + r.inbound_bodies_removed + r.inbound_numbers_masked + r.events_deleted + r.audit_events_deleted;
}

/** The sweeper's run: what it removed, as one number. */
export async function purgeDue(ctx: Context): Promise<number> {
  const report = await runPurge(ctx);
  const removed = total(report);
  if (removed > 0) ctx.log.info({ retention: report }, 'retention purge');
  return removed;
}

function inTransaction<T>(ctx: Context, work: (trx: Context['store']['db']) => Promise<T>): Promise<T> {
  return retryingConflicts(() => ctx.store.db.transaction().execute((trx) => work(trx as unknown as Context['store']['db'])));
}

/** Messages older than `before`: counted into the daily totals and deleted in the same transaction. */
async function deleteMessages(ctx: Context, accountId: string, before: number, size: number, report: PurgeReport): Promise<void> {
  let after = { at: -1, id: '' };
  for (;;) {
    const started = performance.now();
    const rows = await messagesAfter(ctx.store.db, accountId, after, before, size);
    if (rows.length === 0) return;
    const last = rows[rows.length - 1] as PurgeCandidate;
    after = { at: Number(last.created_at), id: last.id };
    const finals = rows.filter((r) => isFinal(r.status));
    if (finals.length > 0) {
      await inTransaction(ctx, async (trx) => {
        const { deleted, events } = await deleteMessagesWithRecords(trx, finals.map((r) => r.id));
        const gone = new Set(deleted);
        const totals = totalsOf(finals.filter((r) => gone.has(r.id)).map((r) => ({ ...r, created_at: Number(r.created_at), sent_at: r.sent_at === null ? null : Number(r.sent_at) })));
        await addDailyTotals(
          trx,
          totals.map((t) => ({ account_id: t.accountId, day: t.day, country: t.country, status: t.status, messages: t.messages, segments: t.segments, credits: t.credits })),
        );
        report.messages_deleted += deleted.length;
        report.events_deleted += events;
      });
      report.batches++;
      await pause(started);
    }
    if (rows.length < size) return;
  }
}

/** Inbound messages and account events older than `before`; a transaction only when some are due. */
async function deleteInbound(ctx: Context, accountId: string, before: number, size: number, report: PurgeReport): Promise<void> {
  for (;;) {
    const started = performance.now();
    const ids = await oldInboundIds(ctx.store.db, accountId, before, size);
    if (ids.length === 0) break;
    const r = await inTransaction(ctx, (trx) => deleteInboundWithEvents(trx, ids));
    report.inbound_deleted += r.inbound;
    report.events_deleted += r.events;
    report.batches++;
    await pause(started);
    if (ids.length < size) break;
  }
  for (;;) {
    const started = performance.now();
    const ids = await oldAccountEventIds(ctx.store.db, accountId, before, size);
    if (ids.length === 0) break;
    report.events_deleted += await inTransaction(ctx, (trx) => deleteEventsWithAttempts(trx, ids));
    report.batches++;
    await pause(started);
    if (ids.length < size) break;
  }
}

/** Removes the text (`body`) or masks the number (`mask`) of final messages; returns how many changed. */
async function applyToMessages(trx: Context['store']['db'], kind: 'body' | 'mask', rows: readonly PurgeCandidate[]): Promise<number> {
  const ids = rows.map((r) => r.id);
  if (kind === 'body') {
    // With the text go the carrier's part ids: kept only to match receipts, about a quarter of
    // what a message takes (docs/performance.md, "Retention").
    await forgetCarrierParts(trx, ids);
    return clearMessageBodies(trx, ids);
  }
  const n = await maskMessageRecipients(trx, ids);
  // Delivery events carry the number (never the text): masked with the message.
  const numbers = rows.map((r) => r.recipient);
  for (const event of await eventPayloadsOf(trx, { messageIds: ids })) {
    const payload = rewritePayload(event.payload, { text: false, numbers });
    if (payload !== event.payload) await setEventPayload(trx, event.id, payload);
  }
  return n;
}

/** The text or number purge of an account's messages, from its cursor up to `before`. */
async function sweepKept(ctx: Context, accountId: string, kind: 'body' | 'mask', before: number, size: number, report: PurgeReport): Promise<void> {
  let after = await retentionCursor(ctx.store.db, accountId, kind);
  for (;;) {
    const started = performance.now();
    const rows = await messagesAfter(ctx.store.db, accountId, after, before, size);
    if (rows.length === 0) return;
    const last = rows[rows.length - 1] as PurgeCandidate;
    await inTransaction(ctx, async (trx) => {
      const finals = rows.filter((r) => isFinal(r.status));
      const open = rows.filter((r) => !isFinal(r.status));
      const n = await applyToMessages(trx, kind, finals);
      if (kind === 'body') report.bodies_removed += n;
      else report.numbers_masked += n;
      await deferMessages(trx, open.map((r) => ({ message_id: r.id, account_id: accountId, created_at: Number(r.created_at) })));
      await setRetentionCursor(trx, accountId, kind, Number(last.created_at), last.id);
    });
    report.batches++;
    after = { at: Number(last.created_at), id: last.id };
    await pause(started);
    if (rows.length < size) return;
  }
}

async function sweepInbound(ctx: Context, accountId: string, kind: 'inbound_body' | 'inbound_mask', before: number, size: number, report: PurgeReport): Promise<void> {
  let after = await retentionCursor(ctx.store.db, accountId, kind);
  for (;;) {
    const started = performance.now();
    const rows = await inboundAfter(ctx.store.db, accountId, after, before, size);
    if (rows.length === 0) return;
    const last = rows[rows.length - 1] as (typeof rows)[number];
    await inTransaction(ctx, async (trx) => {
      const ids = rows.map((r) => r.id);
      if (kind === 'inbound_body') {
        report.inbound_bodies_removed += await clearInboundBodies(trx, ids);
      } else {
        const changed = rows.filter((r) => maskNumber(r.sender) !== r.sender).map((r) => ({ id: r.id, sender: maskNumber(r.sender) }));
        await setInboundSenders(trx, changed);
        report.inbound_numbers_masked += changed.length;
      }
      // `sms.received` carries the text and the sender; an opt-out event the sender's number.
      const numbers = kind === 'inbound_mask' ? rows.map((r) => r.sender) : [];
      for (const event of await eventPayloadsOf(trx, { inboundIds: ids })) {
        const payload = rewritePayload(event.payload, { text: kind === 'inbound_body', numbers });
        if (payload !== event.payload) await setEventPayload(trx, event.id, payload);
      }
      await setRetentionCursor(trx, accountId, kind as RetentionCursorKind, Number(last.received_at), last.id);
    });
    report.batches++;
    after = { at: Number(last.received_at), id: last.id };
    await pause(started);
    if (rows.length < size) return;
  }
}

/** Messages the cursors passed while they were not final: whatever is due, now that they are. */
async function sweepDeferred(ctx: Context, now: number, days: Map<string, RetentionDays>, size: number, report: PurgeReport): Promise<void> {
  for (;;) {
    const started = performance.now();
    const rows = await deferredMessages(ctx.store.db, size);
    if (rows.length === 0) return;
    await inTransaction(ctx, async (trx) => {
      const byKind = { body: [] as PurgeCandidate[], mask: [] as PurgeCandidate[] };
      for (const { message } of rows) {
        const d = message ? days.get(message.account_id) : undefined;
        if (!message || !d) continue;
        if (Number(message.created_at) < cutoff(now, d.bodyDays)) byKind.body.push(message);
        if (d.maskNumbersDays !== null && Number(message.created_at) < cutoff(now, d.maskNumbersDays)) byKind.mask.push(message);
      }
      report.bodies_removed += await applyToMessages(trx, 'body', byKind.body);
      report.numbers_masked += await applyToMessages(trx, 'mask', byKind.mask);
      await undeferMessages(trx, rows.map((r) => r.message_id));
    });
    report.batches++;
    await pause(started);
    if (rows.length < size) return;
  }
}
