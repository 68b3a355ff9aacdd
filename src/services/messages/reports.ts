/**
 * Read-only views of an account's activity for the dashboard: delivery reports (with the same
 * filters as `GET /v1/sms/delivery-reports`), one message with its webhook attempts, the credit
 * ledger and the daily message counts behind the overview charts.
 */
import { MESSAGE_STATUSES, type MessageStatus } from '../../domain/message-status.ts';
import { AppError } from '../../errors/catalogue.ts';
import type { CreditLedgerTable, MessagesTable, WebhookAttemptsTable, WebhookEventsTable } from '../../store/database.ts';
import { listLedger } from '../../store/repositories/ledger.repository.ts';
import { readRows } from '../../store/connect.ts';
import { accountMessage, countMessagesQuery, dailyStatusCounts, listMessagesQuery, messageWebhookHistory, type ReportFilter, type ReportRow } from '../../store/repositories/messages.repository.ts';
import { totalsByDayStatus } from '../../store/repositories/retention.repository.ts';
import type { Context } from '../context.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Counting a filter reads every matching index entry: about 0.4 ms for the 7,000 delivered
 * messages of a 10,000-message campaign, more than the page itself, and a client paging through a
 * campaign asks the same count with every page. So a total of at least LARGE_TOTAL is remembered
 * for TOTAL_TTL_MS per process, and may lag the page by that long; smaller totals are always
 * counted afresh, so they are exact.
 */
const LARGE_TOTAL = 1000;
const TOTAL_TTL_MS = 1000;
const MAX_TOTALS = 10_000;
const totals = new WeakMap<object, Map<string, { total: Promise<number>; at: number }>>();

async function reportTotal(ctx: Context, filter: ReportFilter): Promise<number> {
  let cache = totals.get(ctx.store);
  if (!cache) {
    cache = new Map();
    totals.set(ctx.store, cache);
  }
  const key = JSON.stringify([filter.accountId, filter.batchId, filter.status, filter.messageId]);
  const now = ctx.clock();
  const hit = cache.get(key);
  if (hit && now - hit.at < TOTAL_TTL_MS) return hit.total;
  const counting = readRows(ctx.store, countMessagesQuery(ctx.store.read, filter)).then(([row]) => Number(row?.total ?? 0));
  // A total known to be large is counted again once for everybody: requests arriving meanwhile
  // wait for that count instead of each running its own. Small totals are always counted for the
  // request itself.
  if (hit) cache.set(key, { total: counting, at: now });
  let total: number;
  try {
    total = await counting;
  } catch (err) {
    if (cache.get(key)?.total === counting) cache.delete(key);
    throw err;
  }
  if (total < LARGE_TOTAL) {
    cache.delete(key);
  } else if (!hit) {
    if (cache.size >= MAX_TOTALS) cache.clear();
    cache.set(key, { total: counting, at: now });
  }
  return total;
}

/** A message as a delivery report shows it (without its text). */
export type DeliveryReportRow = ReportRow;
export type DeliveryReportFilter = ReportFilter;

/** One page of delivery reports and the filter's total (the API's and the dashboard's). */
export async function listDeliveryReports(
  ctx: Context,
  filter: DeliveryReportFilter,
  page: number,
  limit: number,
): Promise<{ rows: DeliveryReportRow[]; total: number }> {
  const [rows, total] = await Promise.all([readRows(ctx.store, listMessagesQuery(ctx.store.read, filter, limit, (page - 1) * limit)), reportTotal(ctx, filter)]);
  return { rows, total };
}

export interface MessageDetail {
  message: MessagesTable;
  events: { event: WebhookEventsTable; attempts: WebhookAttemptsTable[] }[];
}

export async function messageDetail(ctx: Context, accountId: string, messageId: string): Promise<MessageDetail> {
  const row = await accountMessage(ctx.store.db, accountId, messageId);
  if (!row) throw new AppError('not_found', `No message ${messageId}.`);
  // Which carrier route took it, and what that costs, is the operator's business, not the customer's.
  const { route: _route, route_cost: _cost, routes_tried: _tried, ...message } = row;
  const { events, attempts } = await messageWebhookHistory(ctx.store.db, messageId);
  return { message, events: events.map((e) => ({ event: e, attempts: attempts.filter((a) => a.event_id === e.id) })) };
}

export async function listCreditLedger(ctx: Context, accountId: string, page: number, limit: number): Promise<CreditLedgerTable[]> {
  return listLedger(ctx.store.db, accountId, limit, (page - 1) * limit);
}

export interface DailyStats {
  /** Day starts (UTC, ms), oldest first. */
  days: number[];
  /** Per status, one count per day. */
  counts: Record<MessageStatus, number[]>;
  /** Delivered among messages with a final status (delivered or failed), or null if none. */
  deliveryRate: number | null;
}

/** Messages created per UTC day and status over the last `days` days, today included. */
export async function dailyMessageStats(ctx: Context, accountId: string, days = 30): Promise<DailyStats> {
  const today = Math.floor(ctx.clock() / DAY_MS);
  const first = today - days + 1;
  // Purged messages were counted into the daily totals as they went (purge.ts), so live rows and
  // totals never count the same message twice and together count every one.
  const [live, purged] = await Promise.all([dailyStatusCounts(ctx.store.db, accountId, first * DAY_MS, DAY_MS), totalsByDayStatus(ctx.store.db, accountId, first)]);
  const rows = [...live, ...purged];
  const counts = Object.fromEntries(MESSAGE_STATUSES.map((s) => [s, new Array<number>(days).fill(0)])) as Record<MessageStatus, number[]>;
  for (const row of rows) {
    const index = Number(row.day) - first;
    if (index >= 0 && index < days) counts[row.status][index] = (counts[row.status][index] ?? 0) + Number(row.n);
  }
  const sum = (s: MessageStatus) => counts[s].reduce((a, b) => a + b, 0);
  const final = sum('delivered') + sum('failed');
  return {
    days: Array.from({ length: days }, (_, i) => (first + i) * DAY_MS),
    counts,
    deliveryRate: final === 0 ? null : sum('delivered') / final,
  };
}
