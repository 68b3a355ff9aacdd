/**
 * The retention purge's and the erasures' queries (src/services/retention/): what is due, the
 * daily totals purged messages are counted into, the purge cursors and the erasure requests.
 * Every read is bounded by a `limit` so that each transaction stays short.
 */
import { deleteLinksOfMessages } from './links.repository.ts';
import { sql } from 'kysely';
import type { Executor } from '../connect.ts';
import type { DailyTotalsTable, ErasuresTable, MessagesTable, RetentionCursorKind } from '../database.ts';
import type { MessageStatus } from '../../domain/message-status.ts';
import { chunked } from '../chunk.ts';

const FINAL: MessageStatus[] = ['delivered', 'failed', 'canceled'];

export interface AccountRetentionRow {
  id: string;
  retention_body_days: number | null;
  retention_message_days: number | null;
  retention_mask_days: number | null;
}

export async function accountsRetention(db: Executor): Promise<AccountRetentionRow[]> {
  return db.selectFrom('accounts').select(['id', 'retention_body_days', 'retention_message_days', 'retention_mask_days']).orderBy('id').execute() as Promise<AccountRetentionRow[]>;
}

export async function accountRetention(db: Executor, accountId: string): Promise<AccountRetentionRow | undefined> {
  return db.selectFrom('accounts').select(['id', 'retention_body_days', 'retention_message_days', 'retention_mask_days']).where('id', '=', accountId).executeTakeFirst() as Promise<AccountRetentionRow | undefined>;
}

export async function updateAccountRetention(db: Executor, accountId: string, patch: Partial<Omit<AccountRetentionRow, 'id'>>): Promise<void> {
  if (Object.keys(patch).length > 0) await db.updateTable('accounts').set(patch).where('id', '=', accountId).execute();
}

/** Where a purge of `kind` got to in the account's rows: (time, id) of the last row it looked at. */
export async function retentionCursor(db: Executor, accountId: string, kind: RetentionCursorKind): Promise<{ at: number; id: string }> {
  const row = await db.selectFrom('retention_cursors').select(['at', 'id']).where('account_id', '=', accountId).where('kind', '=', kind).executeTakeFirst();
  return row ? { at: Number(row.at), id: row.id } : { at: -1, id: '' };
}

export async function setRetentionCursor(db: Executor, accountId: string, kind: RetentionCursorKind, at: number, id: string): Promise<void> {
  await db
    .insertInto('retention_cursors')
    .values({ account_id: accountId, kind, at, id })
    .onConflict((oc) => oc.columns(['account_id', 'kind']).doUpdateSet({ at, id }))
    .execute();
}

export type PurgeCandidate = Pick<MessagesTable, 'id' | 'account_id' | 'status' | 'recipient' | 'segments' | 'charged' | 'credits' | 'sent_at' | 'created_at'>;
const CANDIDATE = ['id', 'account_id', 'status', 'recipient', 'segments', 'charged', 'credits', 'sent_at', 'created_at'] as const;

/** The account's messages after (at, id) and created before `before`, oldest first. */
export async function messagesAfter(db: Executor, accountId: string, after: { at: number; id: string }, before: number, limit: number): Promise<PurgeCandidate[]> {
  return db
    .selectFrom('messages')
    .select(CANDIDATE)
    .where('account_id', '=', accountId)
    .where(sql<boolean>`(created_at, id) > (${after.at}, ${after.id})`)
    .where('created_at', '<', before)
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit)
    .execute();
}

/** Messages passed while not final that are final now (or gone), at most `limit`. */
export async function deferredMessages(db: Executor, limit: number): Promise<{ message_id: string; message: PurgeCandidate | null }[]> {
  const rows = await db
    .selectFrom('retention_deferred as d')
    .leftJoin('messages as m', 'm.id', 'd.message_id')
    .select(['d.message_id', 'm.id', 'm.account_id', 'm.status', 'm.recipient', 'm.segments', 'm.charged', 'm.credits', 'm.sent_at', 'm.created_at'])
    .where((eb) => eb.or([eb('m.id', 'is', null), eb('m.status', 'in', FINAL)]))
    .orderBy('d.message_id')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ message_id: r.message_id, message: r.id === null ? null : (r as unknown as PurgeCandidate) }));
}

export async function deferMessages(db: Executor, rows: { message_id: string; account_id: string; created_at: number }[]): Promise<void> {
  for (const part of chunked(rows, 3)) await db.insertInto('retention_deferred').values(part).onConflict((oc) => oc.column('message_id').doNothing()).execute();
}

export async function undeferMessages(db: Executor, ids: readonly string[]): Promise<void> {
  for (const part of chunked(ids, 1)) await db.deleteFrom('retention_deferred').where('message_id', 'in', part).execute();
}

/** Empties the text of these messages if they are final and still have it; returns how many. */
export async function clearMessageBodies(db: Executor, ids: readonly string[]): Promise<number> {
  let n = 0;
  for (const part of chunked(ids, 1)) {
    const r = await db.updateTable('messages').set({ body: '' }).where('id', 'in', part).where('status', 'in', FINAL).where('body', '<>', '').executeTakeFirst();
    n += Number(r.numUpdatedRows);
  }
  return n;
}

/** Deletes the carrier part ids of these final messages: they match receipts, which a final message takes no more of. */
export async function forgetCarrierParts(db: Executor, ids: readonly string[]): Promise<void> {
  for (const part of chunked(ids, 1)) {
    await db.deleteFrom('carrier_parts').where('message_id', 'in', part).where('message_id', 'in', db.selectFrom('messages').select('id').where('id', 'in', part).where('status', 'in', FINAL)).execute();
  }
}

/** Masks the recipient (last four digits as XXXX) of these final messages; returns how many changed. */
export async function maskMessageRecipients(db: Executor, ids: readonly string[]): Promise<number> {
  let n = 0;
  for (const part of chunked(ids, 1)) {
    const r = await db
      .updateTable('messages')
      .set({ recipient: sql<string>`substr(recipient, 1, length(recipient) - 4) || 'XXXX'` })
      .where('id', 'in', part)
      .where('status', 'in', FINAL)
      .where('recipient', 'not like', '%XXXX')
      .where(sql<boolean>`length(recipient) >= 4`)
      .executeTakeFirst();
    n += Number(r.numUpdatedRows);
  }
  return n;
}

/** Adds purged messages' counts to the daily totals. */
export async function addDailyTotals(db: Executor, rows: DailyTotalsTable[]): Promise<void> {
  for (const row of rows) {
    await db
      .insertInto('daily_totals')
      .values(row)
      .onConflict((oc) =>
        oc.columns(['account_id', 'day', 'country', 'status']).doUpdateSet({
          messages: sql`daily_totals.messages + ${row.messages}`,
          segments: sql`daily_totals.segments + ${row.segments}`,
          credits: sql`daily_totals.credits + ${row.credits}`,
        }),
      )
      .execute();
  }
}

/**
 * Deletes those of these messages that are final, and everything kept per message: webhook events
 * and their attempts, carrier part ids, SMPP receipt data and queued deliver_sm, tracked links
 * and their clicks, purge bookkeeping. Returns the ids deleted (another process's purge may have taken some first) and
 * the number of webhook events.
 */
export async function deleteMessagesWithRecords(db: Executor, ids: readonly string[]): Promise<{ deleted: string[]; events: number }> {
  const deleted: string[] = [];
  let events = 0;
  for (const chunk of chunked(ids, 1)) {
    const part = (await db.deleteFrom('messages').where('id', 'in', chunk).where('status', 'in', FINAL).returning('id').execute()).map((r) => r.id);
    if (part.length === 0) continue;
    deleted.push(...part);
    const eventIds = db.selectFrom('webhook_events').select('id').where('message_id', 'in', part);
    await db.deleteFrom('webhook_attempts').where('event_id', 'in', eventIds).execute();
    events += Number((await db.deleteFrom('webhook_events').where('message_id', 'in', part).executeTakeFirst()).numDeletedRows);
    await db.deleteFrom('carrier_parts').where('message_id', 'in', part).execute();
    await db.deleteFrom('smpp_messages').where('message_id', 'in', part).execute();
    await db.deleteFrom('smpp_outbox').where('message_id', 'in', part).execute();
    await db.deleteFrom('retention_deferred').where('message_id', 'in', part).execute();
    await deleteLinksOfMessages(db, part);
  }
  return { deleted, events };
}

export interface InboundCandidate {
  id: string;
  sender: string;
  received_at: number;
}

/** The account's inbound messages after (at, id) and received before `before`, oldest first. */
export async function inboundAfter(db: Executor, accountId: string, after: { at: number; id: string }, before: number, limit: number): Promise<InboundCandidate[]> {
  return db
    .selectFrom('inbound_messages')
    .select(['id', 'sender', 'received_at'])
    .where('account_id', '=', accountId)
    .where(sql<boolean>`(received_at, id) > (${after.at}, ${after.id})`)
    .where('received_at', '<', before)
    .orderBy('received_at')
    .orderBy('id')
    .limit(limit)
    .execute();
}

export async function clearInboundBodies(db: Executor, ids: readonly string[]): Promise<number> {
  let n = 0;
  for (const part of chunked(ids, 1)) n += Number((await db.updateTable('inbound_messages').set({ body: '' }).where('id', 'in', part).where('body', '<>', '').executeTakeFirst()).numUpdatedRows);
  return n;
}

/** Sets the sender of inbound messages (its masked form, from the caller). */
export async function setInboundSenders(db: Executor, rows: readonly { id: string; sender: string }[]): Promise<void> {
  for (const row of rows) await db.updateTable('inbound_messages').set({ sender: row.sender }).where('id', '=', row.id).execute();
}

/** The account's inbound messages received before `before`, oldest first, at most `limit`. */
export async function oldInboundIds(db: Executor, accountId: string, before: number, limit: number): Promise<string[]> {
  return (await db.selectFrom('inbound_messages').select('id').where('account_id', '=', accountId).where('received_at', '<', before).orderBy('received_at').limit(limit).execute()).map((r) => r.id);
}

/** Deletes these inbound messages with the events they raised; returns how many of each. */
export async function deleteInboundWithEvents(db: Executor, ids: readonly string[]): Promise<{ inbound: number; events: number }> {
  if (ids.length === 0) return { inbound: 0, events: 0 };
  const eventIds = db.selectFrom('webhook_events').select('id').where('inbound_id', 'in', ids);
  await db.deleteFrom('webhook_attempts').where('event_id', 'in', eventIds).execute();
  const events = Number((await db.deleteFrom('webhook_events').where('inbound_id', 'in', ids).executeTakeFirst()).numDeletedRows);
  const inbound = Number((await db.deleteFrom('inbound_messages').where('id', 'in', ids).executeTakeFirst()).numDeletedRows);
  return { inbound, events };
}

/** The account's other events (no message: opt-outs and opt-ins by API or operator) created before `before`. */
export async function oldAccountEventIds(db: Executor, accountId: string, before: number, limit: number): Promise<string[]> {
  return (await db.selectFrom('webhook_events').select('id').where('account_id', '=', accountId).where('created_at', '<', before).where('message_id', 'is', null).orderBy('created_at').limit(limit).execute()).map((r) => r.id);
}

/** Deletes these events with their attempts; returns how many. */
export async function deleteEventsWithAttempts(db: Executor, ids: readonly string[]): Promise<number> {
  if (ids.length === 0) return 0;
  await db.deleteFrom('webhook_attempts').where('event_id', 'in', ids).execute();
  return Number((await db.deleteFrom('webhook_events').where('id', 'in', ids).executeTakeFirst()).numDeletedRows);
}

/** The stored events of these messages or inbound messages, for a number's masking. */
export async function eventPayloadsOf(db: Executor, refs: { messageIds?: readonly string[]; inboundIds?: readonly string[] }): Promise<{ id: string; payload: string }[]> {
  const out: { id: string; payload: string }[] = [];
  for (const part of chunked(refs.messageIds ?? [], 1)) out.push(...(await db.selectFrom('webhook_events').select(['id', 'payload']).where('message_id', 'in', part).execute()));
  for (const part of chunked(refs.inboundIds ?? [], 1)) out.push(...(await db.selectFrom('webhook_events').select(['id', 'payload']).where('inbound_id', 'in', part).execute()));
  return out;
}

/** Per UTC day and status, the daily totals of an account since `sinceDay`. */
export async function totalsByDayStatus(db: Executor, accountId: string, sinceDay: number): Promise<{ day: number; status: MessageStatus; n: number }[]> {
  const rows = await db
    .selectFrom('daily_totals')
    .select((eb) => ['day', 'status', eb.fn.sum<number>('messages').as('n')])
    .where('account_id', '=', accountId)
    .where('day', '>=', sinceDay)
    .groupBy(['day', 'status'])
    .execute();
  return rows.map((r) => ({ day: Number(r.day), status: r.status, n: Number(r.n) }));
}

export interface UsageRow {
  day: number;
  /** Calling code (totals) or the first digits of the number (live rows): usage.ts reads them. */
  prefix: string;
  status: MessageStatus;
  messages: number;
  segments: number;
  credits: number;
}

/** The daily totals of an account between two UTC days (inclusive). */
export async function totalsBetween(db: Executor, accountId: string, fromDay: number, toDay: number): Promise<UsageRow[]> {
  const rows = await db
    .selectFrom('daily_totals')
    .select(['day', 'country', 'status', 'messages', 'segments', 'credits'])
    .where('account_id', '=', accountId)
    .where('day', '>=', fromDay)
    .where('day', '<=', toDay)
    .execute();
  return rows.map((r) => ({ day: Number(r.day), prefix: r.country, status: r.status, messages: Number(r.messages), segments: Number(r.segments), credits: Number(r.credits) }));
}

/**
 * The live messages of an account created in [from, to), summed per UTC day, status, first three
 * digits of the number (enough to tell its calling code) and whether it kept its charge. Refunds
 * follow rules the domain knows (creditsKept), so the groups carry what it needs.
 */
export async function liveUsage(
  db: Executor,
  accountId: string,
  from: number,
  to: number,
  dayMs: number,
): Promise<{ day: number; prefix: string; status: MessageStatus; free: number; unsent: number; messages: number; segments: number; credits: number }[]> {
  const day = sql<number>`created_at / ${sql.lit(dayMs)}`;
  const prefix = sql<string>`substr(recipient, 2, 3)`;
  const free = sql<number>`case when charged = 0 then 1 else 0 end`;
  const unsent = sql<number>`case when sent_at is null then 1 else 0 end`;
  const rows = await db
    .selectFrom('messages')
    .select((eb) => [day.as('day'), prefix.as('prefix'), 'status', free.as('free'), unsent.as('unsent'), eb.fn.countAll<number>().as('messages'), eb.fn.sum<number>('segments').as('segments'), eb.fn.sum<number>(sql`coalesce(credits, segments)`).as('credits')])
    .where('account_id', '=', accountId)
    .where('created_at', '>=', from)
    .where('created_at', '<', to)
    .groupBy([day, prefix, 'status', free, unsent])
    .execute();
  return rows.map((r) => ({ day: Number(r.day), prefix: r.prefix, status: r.status, free: Number(r.free), unsent: Number(r.unsent), messages: Number(r.messages), segments: Number(r.segments), credits: Number(r.credits) }));
}

// Erasures.

export async function insertErasure(db: Executor, row: ErasuresTable): Promise<void> {
  await db.insertInto('erasures').values(row).execute();
}

export async function erasureById(db: Executor, id: string): Promise<ErasuresTable | undefined> {
  return db.selectFrom('erasures').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function pendingErasures(db: Executor, limit: number): Promise<ErasuresTable[]> {
  return db.selectFrom('erasures').selectAll().where('status', '=', 'pending').orderBy('created_at').limit(limit).execute();
}

export async function listErasures(db: Executor, limit: number): Promise<ErasuresTable[]> {
  return db.selectFrom('erasures').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
}

export async function updateErasure(db: Executor, id: string, patch: Partial<Pick<ErasuresTable, 'status' | 'phone' | 'messages' | 'inbound' | 'events' | 'responses' | 'finished_at'>>): Promise<void> {
  await db.updateTable('erasures').set(patch).where('id', '=', id).execute();
}

/** Inbound messages from `phone` of the account, or the unrouted ones (no account) when null (a seek in inbound_account_sender). */
export async function inboundFromNumber(db: Executor, accountId: string | null, phone: string, limit: number): Promise<{ id: string }[]> {
  const q = db.selectFrom('inbound_messages').select('id').where('sender', '=', phone);
  return (accountId === null ? q.where('account_id', 'is', null) : q.where('account_id', '=', accountId)).limit(limit).execute();
}

/** Stored idempotent responses of the account (every account when null) that contain `text`. */
export async function idempotentResponsesContaining(db: Executor, accountId: string | null, text: string): Promise<{ account_id: string; key: string; response_body: string }[]> {
  let q = db.selectFrom('idempotency_keys').select(['account_id', 'key', 'response_body']).where('response_body', 'like', `%${text.replace(/[%_\\]/g, '')}%`);
  if (accountId !== null) q = q.where('account_id', '=', accountId);
  return (await q.execute()) as { account_id: string; key: string; response_body: string }[];
}

export async function setIdempotentResponse(db: Executor, accountId: string, key: string, body: string): Promise<void> {
  await db.updateTable('idempotency_keys').set({ response_body: body }).where('account_id', '=', accountId).where('key', '=', key).execute();
}

/** The account's final messages to `phone`, at most `limit` (a seek in messages_account_recipient). */
export async function finalMessagesToNumber(db: Executor, accountId: string, phone: string, limit: number): Promise<Pick<MessagesTable, 'id' | 'account_id'>[]> {
  return db.selectFrom('messages').select(['id', 'account_id']).where('account_id', '=', accountId).where('recipient', '=', phone).where('status', 'in', FINAL).limit(limit).execute();
}

/** Whether a message to `phone` is still on its way (an erasure waits for it to be final). */
export async function openMessageToNumber(db: Executor, accountId: string, phone: string): Promise<boolean> {
  const q = db.selectFrom('messages').select('id').where('account_id', '=', accountId).where('recipient', '=', phone).where('status', 'not in', FINAL);
  return (await q.limit(1).executeTakeFirst()) !== undefined;
}

/** Events not about a message (opt-outs and opt-ins) of the account (every account when null) whose payload holds `text`. */
export async function accountEventsContaining(db: Executor, accountId: string | null, text: string): Promise<{ id: string; payload: string }[]> {
  let q = db.selectFrom('webhook_events').select(['id', 'payload']).where('message_id', 'is', null).where('payload', 'like', `%${text.replace(/[%_\\]/g, '')}%`);
  if (accountId !== null) q = q.where('account_id', '=', accountId);
  return q.execute();
}

/** Masks the destination kept for SMPP receipts of these messages, and drops their queued deliver_sm. */
export async function forgetSmppAddresses(db: Executor, ids: readonly string[], masked: string): Promise<void> {
  for (const part of chunked(ids, 1)) {
    await db.updateTable('smpp_messages').set({ destination_addr: masked }).where('message_id', 'in', part).execute();
    await db.deleteFrom('smpp_outbox').where('message_id', 'in', part).execute();
  }
}
