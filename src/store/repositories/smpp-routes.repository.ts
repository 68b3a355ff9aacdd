/**
 * SMPP routes (src/services/routes/), the revision that says when they last changed, the links of
 * every worker process as they last saw them, and the margin: what the messages each route took
 * were charged and cost.
 */
import { sql } from 'kysely';
import type { Executor } from '../connect.ts';
import type { SmppRouteLinksTable, SmppRoutesTable } from '../database.ts';

export type SmppRouteRow = SmppRoutesTable;
export type RouteLinkRow = SmppRouteLinksTable;

function numeric(row: SmppRouteRow): SmppRouteRow {
  return {
    ...row,
    port: Number(row.port),
    tps: Number(row.tps),
    window_size: Number(row.window_size),
    priority: Number(row.priority),
    cost_per_segment: row.cost_per_segment === null ? null : Number(row.cost_per_segment),
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  };
}

/** By name. */
export async function smppRouteRows(db: Executor): Promise<SmppRouteRow[]> {
  return (await db.selectFrom('smpp_routes').selectAll().orderBy('name').execute()).map(numeric);
}

export async function smppRouteRow(db: Executor, name: string): Promise<SmppRouteRow | undefined> {
  const row = await db.selectFrom('smpp_routes').selectAll().where('name', '=', name).executeTakeFirst();
  return row && numeric(row);
}

export async function countSmppRoutes(db: Executor): Promise<number> {
  const row = await db.selectFrom('smpp_routes').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A name already taken is a unique violation. */
export async function insertSmppRoutes(db: Executor, rows: SmppRouteRow[]): Promise<void> {
  if (rows.length > 0) await db.insertInto('smpp_routes').values(rows).execute();
}

/** Whether the route existed. */
export async function updateSmppRoute(db: Executor, name: string, changes: Omit<SmppRouteRow, 'name' | 'created_at'>): Promise<boolean> {
  const result = await db.updateTable('smpp_routes').set(changes).where('name', '=', name).executeTakeFirst();
  return result.numUpdatedRows !== 0n;
}

/** Whether the route existed. */
export async function deleteSmppRoute(db: Executor, name: string): Promise<boolean> {
  const result = await db.deleteFrom('smpp_routes').where('name', '=', name).executeTakeFirst();
  return result.numDeletedRows !== 0n;
}

/** Moved by triggers with every change to `smpp_routes` (migration 023). */
export async function readRouteRevision(db: Executor): Promise<number> {
  const row = await db.selectFrom('route_revision').select('value').where('id', '=', 1).executeTakeFirst();
  return Number(row?.value ?? 0);
}

/** Replaces this process's link rows with `links`, and drops every process's rows older than `staleBefore`. */
export async function writeRouteLinks(db: Executor, process: string, links: readonly Omit<RouteLinkRow, 'process'>[], staleBefore: number): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('smpp_route_links').where((eb) => eb.or([eb('process', '=', process), eb('seen_at', '<', staleBefore)])).execute();
    if (links.length > 0) await trx.insertInto('smpp_route_links').values(links.map((l) => ({ ...l, process }))).execute();
  });
}

export async function forgetRouteLinks(db: Executor, process: string): Promise<void> {
  await db.deleteFrom('smpp_route_links').where('process', '=', process).execute();
}

/** Link rows refreshed since `seenSince`. */
export async function liveRouteLinks(db: Executor, seenSince: number): Promise<RouteLinkRow[]> {
  return (await db.selectFrom('smpp_route_links').selectAll().where('seen_at', '>=', seenSince).orderBy('route').orderBy('process').execute()).map((r) => ({
    ...r,
    seen_at: Number(r.seen_at),
  }));
}

export interface MessageRouteRow {
  id: string;
  account_id: string;
  recipient: string;
  sender: string;
  status: string;
  segments: number;
  credits: number;
  route: string | null;
  route_cost: number | null;
  routes_tried: string | null;
  carrier_message_id: string | null;
  error_code: string | null;
  error_message: string | null;
  created_at: number;
  sent_at: number | null;
  delivered_at: number | null;
}

/**
 * What the message was charged: its credits fixed at acceptance (migration 022; its segments
 * for a message accepted before prices), unless it was free (an opt-out confirmation).
 * One expression, so that the margin and the message view agree with the ledger's debit.
 */
const CREDITS_CHARGED = sql<number>`case when coalesce(charged, 1) = 0 then 0 else coalesce(credits, segments) end`;

/** The operator's view of one message (any account), without its body. */
export async function messageForOperator(db: Executor, id: string): Promise<MessageRouteRow | undefined> {
  const row = await db
    .selectFrom('messages')
    .select([
      'id',
      'account_id',
      'recipient',
      'sender',
      'status',
      'segments',
      'route',
      'route_cost',
      'routes_tried',
      'carrier_message_id',
      'error_code',
      'error_message',
      'created_at',
      'sent_at',
      'delivered_at',
    ])
    .select(CREDITS_CHARGED.as('credits'))
    .where('id', '=', id)
    .executeTakeFirst();
  if (!row) return undefined;
  const n = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    ...row,
    route: row.route ?? null,
    routes_tried: row.routes_tried ?? null,
    segments: Number(row.segments),
    credits: Number(row.credits),
    route_cost: n(row.route_cost),
    created_at: Number(row.created_at),
    sent_at: n(row.sent_at),
    delivered_at: n(row.delivered_at),
  };
}

export interface MarginAggregate {
  /** Start of the UTC day, ms since the epoch. */
  day: number;
  route: string;
  messages: number;
  segments: number;
  credits: number;
  cost: number;
}

/** Per UTC day (of `sent_at`) and route: the messages routes took in [from, to). */
export async function marginByDayAndRoute(db: Executor, from: number, to: number): Promise<MarginAggregate[]> {
  const dayMs = 86_400_000;
  // Integer division on both databases (bigint on PostgreSQL, integer on SQLite).
  const day = sql<number>`(sent_at / ${sql.lit(dayMs)}) * ${sql.lit(dayMs)}`;
  const rows = await db
    .selectFrom('messages')
    .select([
      day.as('day'),
      'route',
      (eb) => eb.fn.countAll<number>().as('messages'),
      (eb) => eb.fn.sum<number>('segments').as('segments'),
      (eb) => eb.fn.sum<number>(CREDITS_CHARGED).as('credits'),
      (eb) => eb.fn.sum<number>(sql`coalesce(route_cost, 0)`).as('cost'),
    ])
    .where('route', 'is not', null)
    .where('sent_at', '>=', from)
    .where('sent_at', '<', to)
    .groupBy([day, 'route'])
    .orderBy(day)
    .orderBy('route')
    .execute();
  return rows.map((r) => ({
    day: Number(r.day),
    route: r.route as string,
    messages: Number(r.messages),
    segments: Number(r.segments),
    credits: Number(r.credits),
    cost: Number(r.cost),
  }));
}
