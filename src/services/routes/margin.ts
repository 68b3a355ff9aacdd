/**
 * The operator's margin (DECISIONS.md §11): per UTC day and route, the messages the route took,
 * their segments, the credits the customers were charged for them and what the carrier charges
 * (fixed on each message when the route took it). Messages a route took are never refunded (a
 * refund is for a message that never left), so the credits charged are the ledger's debits for
 * them.
 */
import { AppError } from '../../errors/catalogue.ts';
import type { MarginRow } from '../../domain/smpp-routes.ts';
import { marginByDayAndRoute, messageForOperator, type MessageRouteRow } from '../../store/repositories/smpp-routes.repository.ts';
import type { Context } from '../context.ts';

const DAY_MS = 86_400_000;

export interface MarginReport {
  from: string;
  to: string;
  data: MarginRow[];
  totals: Omit<MarginRow, 'day' | 'route'>;
}

function day(text: string, flag: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text.trim());
  const at = m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : Number.NaN;
  if (!m || Number.isNaN(at) || new Date(at).toISOString().slice(0, 10) !== text.trim()) throw new AppError('invalid_request', `${flag} is a date such as 2026-11-26 (UTC).`);
  return at;
}

/** `from` and `to` are UTC dates (YYYY-MM-DD), both days included. */
export async function marginReport(ctx: Context, from: string, to: string): Promise<MarginReport> {
  const start = day(from, '--from');
  const end = day(to, '--to') + DAY_MS;
  if (end <= start) throw new AppError('invalid_request', '--to is a day on or after --from.');
  if (end - start > 366 * DAY_MS) throw new AppError('invalid_request', 'A margin report covers at most 366 days.');
  const rows = await marginByDayAndRoute(ctx.store.read, start, end);
  const data: MarginRow[] = rows.map((r) => ({
    day: new Date(r.day).toISOString().slice(0, 10),
    route: r.route,
    messages: r.messages,
    segments: r.segments,
    credits_charged: r.credits,
    carrier_cost: r.cost,
    margin: r.credits - r.cost,
  }));
  const totals = { messages: 0, segments: 0, credits_charged: 0, carrier_cost: 0, margin: 0 };
  for (const r of data) {
    totals.messages += r.messages;
    totals.segments += r.segments;
    totals.credits_charged += r.credits_charged;
    totals.carrier_cost += r.carrier_cost;
    totals.margin += r.margin;
  }
  return { from: from.trim(), to: to.trim(), data, totals };
}

/** One message as the operator sees it (any account): where it went and what it cost, never its body. */
export type OperatorMessage = MessageRouteRow & { routes_tried_list: string[] };

export async function operatorMessage(ctx: Context, id: string): Promise<OperatorMessage> {
  const row = await messageForOperator(ctx.store.db, id.trim());
  if (!row) throw new AppError('not_found', `No message ${id.trim().slice(0, 60)}.`);
  return { ...row, routes_tried_list: row.routes_tried ? row.routes_tried.split(',') : [] };
}
