/**
 * Monthly usage of an account (the dashboard's Usage page and its CSV export): messages,
 * segments and credits per month, destination calling code and status. Messages removed by the
 * retention purge are read from the daily totals they were counted into, the others from the
 * messages table, so the figures stay the same after a purge.
 */
import { callingCodeOf } from '../../domain/calling-codes.ts';
import type { MessageStatus } from '../../domain/message-status.ts';
import { creditsKept, DAY_MS } from '../../domain/retention.ts';
import { csvCell } from '../../domain/csv-cell.ts';
import { liveUsage, totalsBetween } from '../../store/repositories/retention.repository.ts';
import type { Context } from '../context.ts';

export interface UsageLine {
  /** `2026-11`. */
  month: string;
  /** Calling code of the destination (`44`), '' when none is known. */
  country: string;
  status: MessageStatus;
  messages: number;
  segments: number;
  credits: number;
}

/** The first millisecond of the UTC month `back` months before the one of `now`. */
function monthStart(now: number, back: number): number {
  const d = new Date(now);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - back, 1);
}

/** The account's usage over the last `months` months (this one included), newest month first. */
export async function monthlyUsage(ctx: Context, accountId: string, months = 12): Promise<UsageLine[]> {
  const now = ctx.clock();
  const from = monthStart(now, months - 1);
  const to = monthStart(now, -1);
  const [purged, live] = await Promise.all([
    totalsBetween(ctx.store.db, accountId, Math.floor(from / DAY_MS), Math.floor(to / DAY_MS) - 1),
    liveUsage(ctx.store.db, accountId, from, to, DAY_MS),
  ]);
  const lines = new Map<string, UsageLine>();
  const add = (day: number, country: string, status: MessageStatus, messages: number, segments: number, credits: number) => {
    const month = new Date(day * DAY_MS).toISOString().slice(0, 7);
    const key = `${month}|${country}|${status}`;
    const line = lines.get(key) ?? { month, country, status, messages: 0, segments: 0, credits: 0 };
    line.messages += messages;
    line.segments += segments;
    line.credits += credits;
    lines.set(key, line);
  };
  for (const t of purged) add(t.day, t.prefix, t.status, t.messages, t.segments, t.credits);
  for (const r of live) {
    const credits = creditsKept({ status: r.status, segments: r.segments, credits: r.credits, charged: r.free ? 0 : 1, sent_at: r.unsent ? null : 0 });
    add(r.day, callingCodeOf(`+${r.prefix}`) ?? '', r.status, r.messages, r.segments, credits);
  }
  return [...lines.values()].sort((a, b) => (a.month !== b.month ? (a.month < b.month ? 1 : -1) : a.country !== b.country ? Number(a.country || 0) - Number(b.country || 0) : a.status.localeCompare(b.status)));
}

/**
 * The usage as CSV, one line per month, destination and status. The destination is its calling
 * code without `+` (`44`), which a spreadsheet would otherwise read as a formula's start.
 */
export function usageCsv(lines: readonly UsageLine[]): string {
  const head = 'month,calling_code,status,messages,segments,credits\r\n';
  return head + lines.map((l) => [l.month, l.country === '' ? 'unknown' : l.country, l.status, l.messages, l.segments, l.credits].map((v) => csvCell(String(v))).join(',') + '\r\n').join('');
}
