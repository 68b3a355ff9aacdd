import { sql } from 'kysely';
import { deleteLinksOfMessages } from './links.repository.ts';
import type { Executor } from '../connect.ts';
import type { BatchesTable, MessagesTable, WebhookAttemptsTable, WebhookEventsTable } from '../database.ts';
import type { MessageStatus } from '../../domain/message-status.ts';
import { chunked } from '../chunk.ts';
import { insertRows } from '../insert-rows.ts';
import { dialectOf } from '../dialect.ts';
import { preparedWrite } from '../prepared-statements.ts';

export async function insertMessages(db: Executor, rows: MessagesTable[]): Promise<void> {
  await insertRows(db, 'messages', rows);
}

export async function insertBatches(db: Executor, rows: BatchesTable[]): Promise<void> {
  if (rows.length > 0) await db.insertInto('batches').values(rows).execute();
}

export async function messagesByIds(db: Executor, ids: string[]): Promise<MessagesTable[]> {
  const out: MessagesTable[] = [];
  for (const part of chunked(ids, 1)) {
    out.push(...(await db.selectFrom('messages').selectAll().where('id', 'in', part).execute()));
  }
  return out;
}

/**
 * Messages still `sent` since before `cutoff`: the expiry sweep's next batch. Those with their
 * own validity period (`expires_at`) are left to the validity sweep (`expiredMessages`).
 */
export async function staleSentMessages(db: Executor, cutoff: number, limit: number): Promise<MessagesTable[]> {
  return db.selectFrom('messages').selectAll().where('status', '=', 'sent').where('sent_at', '<', cutoff).where('expires_at', 'is', null).limit(limit).execute();
}

/**
 * Messages in `status` whose own validity period (`expires_at`, migration 014) ended by `now`:
 * the validity sweep's next batch, read from the index of expiring messages.
 */
export async function expiredMessages(db: Executor, status: 'pending' | 'sent', now: number, limit: number): Promise<MessagesTable[]> {
  return db
    .selectFrom('messages')
    .selectAll()
    .where('status', '=', status)
    .where('expires_at', 'is not', null)
    .where('expires_at', '<=', now)
    .orderBy('expires_at')
    .limit(limit)
    .execute();
}

/** One of an account's messages, or undefined (also when it is another account's). */
export async function accountMessage(db: Executor, accountId: string, messageId: string): Promise<MessagesTable | undefined> {
  return db.selectFrom('messages').selectAll().where('id', '=', messageId).where('account_id', '=', accountId).executeTakeFirst();
}

/** The webhook events of a message, oldest first, and all their attempts. */
export async function messageWebhookHistory(db: Executor, messageId: string): Promise<{ events: WebhookEventsTable[]; attempts: WebhookAttemptsTable[] }> {
  const events = await db.selectFrom('webhook_events').selectAll().where('message_id', '=', messageId).orderBy('created_at').orderBy('id').execute();
  const attempts =
    events.length === 0
      ? []
      : await db
          .selectFrom('webhook_attempts')
          .selectAll()
          .where(
            'event_id',
            'in',
            events.map((e) => e.id),
          )
          .orderBy('attempted_at')
          .orderBy('attempt')
          .execute();
  return { events, attempts };
}

/** An account's messages created since `since`, counted per UTC day (days since 1970) and status. */
export async function dailyStatusCounts(db: Executor, accountId: string, since: number, dayMs: number): Promise<{ day: number; status: MessageStatus; n: number }[]> {
  // Integer division of integer milliseconds gives the UTC day number on both SQLite and PostgreSQL.
  const day = sql<number>`created_at / ${sql.lit(dayMs)}`;
  const rows = await db
    .selectFrom('messages')
    .select((eb) => [day.as('day'), 'status', eb.fn.countAll<number>().as('n')])
    .where('account_id', '=', accountId)
    .where('created_at', '>=', since)
    .groupBy([day, 'status'])
    .execute();
  return rows.map((r) => ({ day: Number(r.day), status: r.status, n: Number(r.n) }));
}

export interface ReportFilter {
  accountId: string;
  messageId?: string;
  batchId?: string;
  status?: MessageStatus;
}

function reportQuery(db: Executor, filter: ReportFilter) {
  let base = db.selectFrom('messages').where('account_id', '=', filter.accountId);
  if (filter.messageId !== undefined) base = base.where('id', '=', filter.messageId);
  if (filter.batchId !== undefined) base = base.where('batch_id', '=', filter.batchId);
  if (filter.status !== undefined) base = base.where('status', '=', filter.status);
  return base;
}

/** How many of an account's messages match the filter (an index range count). */
export function countMessagesQuery(db: Executor, filter: ReportFilter) {
  return reportQuery(db, filter).select((eb) => eb.fn.countAll<number>().as('total'));
}

/** What a delivery report shows of a message: not its text, which is the largest column to read. */
export const REPORT_COLUMNS = [
  'id',
  'batch_id',
  'recipient',
  'sender',
  'status',
  'segments',
  'credits',
  'charged',
  'encoding',
  'error_code',
  'error_message',
  'created_at',
  'sent_at',
  'delivered_at',
  'send_at',
  'category',
  'held_until',
] as const;
export type ReportRow = Pick<MessagesTable, (typeof REPORT_COLUMNS)[number]>;

/** One page of an account's messages, newest first (ties by id, descending). */
export function listMessagesQuery(db: Executor, filter: ReportFilter, limit: number, offset: number) {
  // The page is found in the filter's index alone (every report index ends in created_at, id),
  // then only its rows are read: with OFFSET, reading whole rows would also read every skipped one.
  const page = reportQuery(db, filter).select('id').orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset);
  return db.selectFrom('messages').select(REPORT_COLUMNS).where('id', 'in', page).orderBy('created_at', 'desc').orderBy('id', 'desc');
}

/** Records that a pending marketing message waits for its quiet-hours window to open at `heldUntil` (ms). */
export async function holdMessage(db: Executor, id: string, heldUntil: number): Promise<void> {
  await db.updateTable('messages').set({ held_until: heldUntil }).where('id', '=', id).where('status', '=', 'pending').execute();
}

/** A message's move from one state to the next (`next` is the whole row as it is after it). */
export interface MessageMove {
  previous: MessagesTable;
  next: MessagesTable;
}

/** The columns a status change may set besides `status` and `updated_at`. */
const MOVED_COLUMNS = ['sent_at', 'delivered_at', 'carrier_message_id', 'error_code', 'error_message', 'route', 'route_cost', 'routes_tried'] as const;
type MovedColumn = (typeof MOVED_COLUMNS)[number];

type Mover = (db: Executor, ...args: (string | number | null)[]) => Promise<{ numAffectedRows?: bigint }>;
const movers = new Map<string, Mover>();

/**
 * The UPDATE of a move that sets `status`, `updated_at` and only the columns named, guarded by the
 * current status so that only one of two concurrent workers can make the same move. SQLite rewrites
 * the entry of every index over a column in the SET list, whether or not its value changed: a
 * `delivered` that also wrote `sent_at` and `carrier_message_id` back rewrote the entries of
 * `messages_carrier_id`, `messages_status_sent` and `messages_route_sent` for nothing.
 */
function mover(columns: readonly MovedColumn[]): Mover {
  const key = columns.join(',');
  let m = movers.get(key);
  if (!m) {
    m = preparedWrite((db, status: string | number | null, now: string | number | null, id: string | number | null, previous: string | number | null, ...values: (string | number | null)[]) =>
      db
        .updateTable('messages')
        .set({ status: status as MessageStatus, updated_at: now as number, ...Object.fromEntries(columns.map((c, i) => [c, values[i]])) })
        .where('id', '=', id as string)
        .where('status', '=', previous as MessageStatus),
    ) as Mover;
    movers.set(key, m);
  }
  return m;
}

/** Writes one move if the message is still in its previous status; returns whether it was. */
export async function moveMessage(trx: Executor, { previous, next }: MessageMove, now: number): Promise<boolean> {
  const columns = MOVED_COLUMNS.filter((c) => (next[c] ?? null) !== (previous[c] ?? null));
  const result = await mover(columns)(trx, next.status, now, previous.id, previous.status, ...columns.map((c) => next[c] ?? null));
  return result.numAffectedRows !== 0n;
}

/**
 * `moveMessage` for many messages, each named once, with the same guard; returns the ids of the
 * messages that moved. On PostgreSQL, where every statement is a round trip and the server's
 * per-statement work is what limits the pipeline, the moves go in one UPDATE per pair of statuses,
 * the values as arrays. SQLite runs in the process with no round trip, and its one prepared
 * UPDATE per message is cheaper than a statement built anew for each batch, so there the moves
 * are written one by one.
 */
export async function moveMessages(trx: Executor, moves: MessageMove[], now: number): Promise<Set<string>> {
  const moved = new Set<string>();
  if (dialectOf(trx) === 'sqlite') {
    for (const move of moves) if (await moveMessage(trx, move, now)) moved.add(move.previous.id);
    return moved;
  }
  const groups = new Map<string, MessagesTable[]>();
  for (const { previous, next } of moves) {
    const key = `${previous.status}>${next.status}`;
    const group = groups.get(key);
    if (group) group.push(next);
    else groups.set(key, [next]);
  }
  for (const [key, group] of groups) {
    const [from, to] = key.split('>') as [MessageStatus, MessageStatus];
    // One parameter per column, the rows joined back by id: the statement's text is the same for
    // every batch and its size, so PostgreSQL parses and plans a few lines, not a CASE of a hundred
    // branches per column that it then searched for every row.
    const { rows } = await sql<{ id: string }>`
      update messages m set
        status = ${to}, updated_at = ${now}, sent_at = v.sent_at, delivered_at = v.delivered_at,
        carrier_message_id = v.carrier_message_id, error_code = v.error_code, error_message = v.error_message,
        route = v.route, route_cost = v.route_cost, routes_tried = v.routes_tried
      from unnest(${group.map((m) => m.id)}::text[], ${group.map((m) => m.sent_at)}::bigint[], ${group.map((m) => m.delivered_at)}::bigint[],
        ${group.map((m) => m.carrier_message_id)}::text[], ${group.map((m) => m.error_code)}::text[], ${group.map((m) => m.error_message)}::text[],
        ${group.map((m) => m.route)}::text[], ${group.map((m) => m.route_cost)}::bigint[], ${group.map((m) => m.routes_tried)}::text[])
        as v(id, sent_at, delivered_at, carrier_message_id, error_code, error_message, route, route_cost, routes_tried)
      where m.id = v.id and m.status = ${from}
      returning m.id`.execute(trx);
    for (const row of rows) moved.add(row.id);
  }
  return moved;
}

/** The account's messages to one recipient accepted since `since`, newest first, at most `limit` (the dashboard's conversation view). */
export async function messagesTo(db: Executor, accountId: string, recipient: string, since: number, limit: number): Promise<MessagesTable[]> {
  return db
    .selectFrom('messages')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('created_at', '>=', since)
    .where('recipient', '=', recipient)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** The account's message, or every message of the account's batch, with what redaction checks. */
export async function messagesToRedact(db: Executor, accountId: string, target: { messageId: string } | { batchId: string }): Promise<Pick<MessagesTable, 'id' | 'status' | 'recipient'>[]> {
  const query = db.selectFrom('messages').select(['id', 'status', 'recipient']).where('account_id', '=', accountId);
  return 'messageId' in target ? query.where('id', '=', target.messageId).execute() : query.where('batch_id', '=', target.batchId).orderBy('id').execute();
}

/**
 * Empties the text and masks the recipient (last four digits as XXXX, as `maskNumber` of
 * src/domain/redaction.ts does for E.164) of these messages; a masked one stays as it is.
 */
export async function redactMessageRows(db: Executor, ids: readonly string[]): Promise<void> {
  for (const part of chunked(ids, 1)) {
    await db
      .updateTable('messages')
      .set({
        body: '',
        recipient: sql<string>`case when recipient like '%XXXX' or length(recipient) < 4 then recipient else substr(recipient, 1, length(recipient) - 4) || 'XXXX' end`,
      })
      .where('id', 'in', part)
      .execute();
    // Tracked links carry the text's URLs: a redacted message's links and clicks go, and they stop redirecting.
    await deleteLinksOfMessages(db, part);
  }
}

/** The Twilio-compatible list's filters (DECISIONS.md §12). */
export interface TwilioMessageFilter {
  accountId: string;
  recipient?: string;
  sender?: string;
  /** `sent_at` within [sentFrom, sentUntil). */
  sentFrom?: number;
  sentUntil?: number;
  /** Only messages before this one in the order (created_at, id descending): the page token. */
  before?: { createdAt: number; id: string };
}

/** A page of the account's messages, newest first (ties by id, descending), whole rows. */
export async function twilioMessagesPage(db: Executor, filter: TwilioMessageFilter, limit: number, offset: number): Promise<MessagesTable[]> {
  let q = db.selectFrom('messages').selectAll().where('account_id', '=', filter.accountId);
  if (filter.recipient !== undefined) q = q.where('recipient', '=', filter.recipient);
  if (filter.sender !== undefined) q = q.where('sender', '=', filter.sender);
  if (filter.sentFrom !== undefined) q = q.where('sent_at', '>=', filter.sentFrom);
  if (filter.sentUntil !== undefined) q = q.where('sent_at', '<', filter.sentUntil);
  const before = filter.before;
  if (before) q = q.where((eb) => eb.or([eb('created_at', '<', before.createdAt), eb.and([eb('created_at', '=', before.createdAt), eb('id', '<', before.id)])]));
  return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute();
}

/**
 * Deletes a message of the account with what only it refers to (its webhook events and their
 * attempts, its carrier parts); the ledger keeps its rows. Returns the status the message had, or
 * undefined when the account has no such message; a message not in one of `finalStatuses` is
 * left as it is.
 */
export async function deleteMessageIfIn(db: Executor, accountId: string, id: string, finalStatuses: readonly MessageStatus[]): Promise<MessageStatus | undefined> {
  const row = await db.selectFrom('messages').select('status').where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
  if (!row || !finalStatuses.includes(row.status)) return row?.status;
  const deleted = await db.deleteFrom('messages').where('id', '=', id).where('status', 'in', finalStatuses).executeTakeFirst();
  if (deleted.numDeletedRows === 0n) return (await db.selectFrom('messages').select('status').where('id', '=', id).executeTakeFirst())?.status;
  const events = db.selectFrom('webhook_events').select('id').where('message_id', '=', id);
  await db.deleteFrom('webhook_attempts').where('event_id', 'in', events).execute();
  await db.deleteFrom('webhook_events').where('message_id', '=', id).execute();
  await db.deleteFrom('carrier_parts').where('message_id', '=', id).execute();
  return row.status;
}

export interface MessageRouteRecord {
  id: string;
  /** The route that took it; null while none has. */
  route: string | null;
  route_cost: number | null;
  /** Comma-separated; null for none. */
  routes_tried: string | null;
}

/**
 * Records which route took each message (or which ones it has tried). On PostgreSQL one UPDATE for
 * the batch, the values as arrays; on SQLite one prepared UPDATE each, which costs less there.
 */
const updateRoute = preparedWrite((db, route: string | null, routeCost: number | null, routesTried: string | null, id: string) =>
  db.updateTable('messages').set({ route, route_cost: routeCost, routes_tried: routesTried }).where('id', '=', id),
);

export async function recordMessageRoutes(trx: Executor, records: readonly MessageRouteRecord[]): Promise<void> {
  if (records.length === 0) return;
  if (dialectOf(trx) === 'sqlite') {
    for (const r of records) await updateRoute(trx, r.route, r.route_cost, r.routes_tried, r.id);
    return;
  }
  await sql`
    update messages m set route = v.route, route_cost = v.route_cost, routes_tried = v.routes_tried
    from unnest(${records.map((r) => r.id)}::text[], ${records.map((r) => r.route)}::text[], ${records.map((r) => r.route_cost)}::bigint[],
      ${records.map((r) => r.routes_tried)}::text[]) as v(id, route, route_cost, routes_tried)
    where m.id = v.id`.execute(trx);
}
