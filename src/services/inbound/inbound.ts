/**
 * Inbound (MO) messages (DECISIONS.md §8): what a carrier delivers to a number is stored for the
 * account that holds the number, with its `sms.received` event, in one transaction; a message to a
 * number nobody holds is stored unrouted, for the operator, never dropped. The carrier connector
 * acknowledges a message only after `receiveCarrierInbound` returns, so a crash never loses one the
 * carrier thinks delivered.
 */
import { AppError } from '../../errors/catalogue.ts';
import { parseOwnNumber } from '../../domain/own-number.ts';
import { parseRecipient } from '../../domain/phone-number.ts';
import { segmentMessage, type Encoding } from '../../domain/segmentation.ts';
import { enqueueSmppInbound } from '../smpp-access/smpp-outbox.ts';
import { correspondents, inboundFrom, inboundPage, insertInbound, unroutedInbound, type InboundFilter, type InboundRow } from '../../store/repositories/inbound-messages.repository.ts';
import { messagesTo } from '../../store/repositories/messages.repository.ts';
import { numberHolder, ownedNumber } from '../../store/repositories/numbers.repository.ts';
import { DONE_SEQ, deleteDoneGroups, deletePartGroup, insertPart, lockPartGroup, markGroupDone, partsOfGroup, staleGroups, type InboundPartRow } from '../../store/repositories/inbound-parts.repository.ts';
import type { Transaction } from 'kysely';
import type { Database } from '../../store/database.ts';
import type { InboundCarrierMessage } from '../../carriers/carrier.ts';
import { iso, newId } from '../../util/ids.ts';
import type { Context } from '../context.ts';
import { queueAccountEvent } from '../webhooks/account-events.ts';
import { applyKeyword, observeOptOutChange } from '../opt-outs/opt-outs.ts';
import { queueInboundPost } from '../twilio/inbound-posts.ts';

/** The longest inbound text stored: a concatenated SMS has at most 255 parts of 153 septets. */
export const MAX_INBOUND_CHARACTERS = 255 * 160;
/** The simulator takes what a customer may send. */
export const MAX_SIMULATED_CHARACTERS = 1600;

export interface InboundInput {
  /** The sender, already E.164 when the address allowed it (a short code or a name otherwise). */
  from: string;
  /** The number it was sent to, as the carrier gave it. */
  to: string;
  message: string;
  /** As the carrier coded it; counted from the text when not given. */
  encoding?: Encoding | string;
  segments?: number;
  /** Stored with the parts that came before reassembly timed out. */
  incomplete?: boolean;
}

/** An inbound message as the API, the events and the dashboard show it. */
export interface InboundView {
  id: string;
  from: string;
  to: string;
  message: string;
  segments: number;
  encoding: string;
  received_at: string;
  incomplete?: true;
}

export function inboundView(row: InboundRow): InboundView {
  return {
    id: row.id,
    from: row.sender,
    to: row.recipient,
    message: row.body,
    segments: row.segments,
    encoding: row.encoding,
    received_at: iso(Number(row.received_at)),
    ...(Number(row.incomplete) ? { incomplete: true as const } : {}),
  };
}

/** The canonical spelling of the number a message came to (as assigned), or the text as given. */
function recipientKey(to: string): string {
  const parsed = parseOwnNumber(to.length > 32 ? '' : to);
  if (parsed.ok) return parsed.number;
  // Carriers often send the destination without its "+".
  const withPlus = /^[1-9][0-9]{7,14}$/.test(to) ? parseOwnNumber(`+${to}`) : null;
  return withPlus?.ok ? withPlus.number : to;
}

/** Stores one inbound message in the caller's transaction, with its `sms.received` event when routed. */
interface Stored {
  row: InboundRow;
  /** A keyword changed the account's opt-out list. */
  optOutsChanged: boolean;
  /** A confirmation was queued for dispatch. */
  replied: boolean;
}

async function storeInbound(trx: Transaction<Database>, input: InboundInput, now: number): Promise<Stored> {
  const to = recipientKey(input.to);
  const counted = input.encoding === undefined || input.segments === undefined ? segmentMessage(input.message) : null;
  const holder = await numberHolder(trx, to);
  const stored: InboundRow = {
    id: newId('in', now),
    account_id: holder?.account_id ?? null,
    sender: input.from.slice(0, 32),
    recipient: to.slice(0, 32),
    body: input.message.slice(0, MAX_INBOUND_CHARACTERS),
    encoding: input.encoding ?? counted!.encoding,
    segments: input.segments ?? counted!.segments,
    incomplete: input.incomplete ? 1 : 0,
    received_at: now,
  };
  await insertInbound(trx, stored);
  if (!holder) return { row: stored, optOutsChanged: false, replied: false };
  await queueAccountEvent(trx, holder, 'sms.received', { ...inboundView(stored) }, now, stored.id);
  await queueInboundPost(trx, holder, stored, now);
  await enqueueSmppInbound(trx, holder.account_id, stored, now);
  // Keywords apply after the event is raised: sms.received comes before the opt-out it causes.
  const keyword = await applyKeyword(trx, holder, stored, now);
  return { row: stored, optOutsChanged: keyword.changed, replied: keyword.replyId !== null };
}

async function afterStore(ctx: Context, stored: Stored): Promise<{ row: InboundRow; routed: boolean }> {
  const { row } = stored;
  if (row.account_id !== null) ctx.wake('webhook');
  else ctx.log.warn({ inboundId: row.id, to: row.recipient }, 'inbound message to a number no account holds: kept as unrouted');
  if (stored.optOutsChanged) {
    // The message is committed, and the carrier must hear so: a failure here would have it sent
    // again (a second copy) or, in a group commit, fail its neighbours. This only spares this
    // process's access cache a read; the next request reads the revision anyway.
    await observeOptOutChange(ctx).catch((err: unknown) => ctx.log.warn({ err, inboundId: row.id }, 'access revision not read after an opt-out keyword'));
  }
  if (stored.replied) ctx.wake('dispatch');
  return { row, routed: row.account_id !== null };
}

/**
 * Stores one inbound message (for its number's account, or unrouted) and queues its
 * `sms.received` event, in one transaction. Returns the stored row and whether it was routed.
 */
export async function receiveInbound(ctx: Context, input: InboundInput): Promise<{ row: InboundRow; routed: boolean }> {
  const now = ctx.clock();
  const stored = await ctx.store.db.transaction().execute((trx) => storeInbound(trx, input, now));
  return afterStore(ctx, stored);
}

/**
 * Group commit for the carrier's single-part messages: those that arrive while a transaction is
 * being written wait for the next one, and all waiting are stored in one transaction (each still
 * answered only once that transaction committed). Under load, hundreds of small commits become a
 * few larger ones; alone, a message still commits at once. If a group's transaction fails, each
 * message is stored again alone, so one bad message never fails its neighbours.
 */
class InboundBatcher {
  #queue: { input: InboundInput; resolve: (row: InboundRow) => void; reject: (error: unknown) => void }[] = [];
  #running = false;
  #scheduled = false;

  constructor(private readonly ctx: Context) {}

  store(input: InboundInput): Promise<InboundRow> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ input, resolve, reject });
      if (!this.#scheduled && !this.#running) {
        this.#scheduled = true;
        setImmediate(() => {
          this.#scheduled = false;
          void this.#pump();
        });
      }
    });
  }

  async #pump(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      while (this.#queue.length > 0) {
        const items = this.#queue.splice(0, 500);
        const now = this.ctx.clock();
        let stored: Stored[] | null = null;
        try {
          stored = await this.ctx.store.db.transaction().execute(async (trx) => {
            const out: Stored[] = [];
            for (const item of items) out.push(await storeInbound(trx, item.input, now));
            return out;
          });
        } catch {
          stored = null;
        }
        if (stored) {
          for (const [i, item] of items.entries()) item.resolve((await afterStore(this.ctx, stored[i]!)).row);
          continue;
        }
        for (const item of items) {
          try {
            item.resolve((await receiveInbound(this.ctx, item.input)).row);
          } catch (error) {
            item.reject(error);
          }
        }
      }
    } finally {
      this.#running = false;
    }
  }
}

const batchers = new WeakMap<object, InboundBatcher>();

function inboundBatcher(ctx: Context): InboundBatcher {
  let batcher = batchers.get(ctx.store);
  if (!batcher) {
    batcher = new InboundBatcher(ctx);
    batchers.set(ctx.store, batcher);
  }
  return batcher;
}

/** How long the parts of a multi-part message wait for the rest (DECISIONS.md §8). */
export const REASSEMBLY_TIMEOUT_MS = 60_000;

/**
 * How long a stored multi-part message's parts are kept to recognise one the carrier sends again.
 * An SMSC resends what it got no answer for as soon as it is bound again, so this only has to
 * outlast a restart; a handset reuses a concatenation reference after 256 long messages, which no
 * person sends to one number in this time.
 */
export const DONE_PARTS_KEPT_MS = 10 * 60_000;

/**
 * A message or part from a carrier connection (SMPP deliver_sm), stored before it returns: the
 * connector answers the carrier only then. A part is stored on its own; the one that completes
 * its message (in any order, each part once even if the carrier repeats it) turns the parts into
 * one inbound message in the same transaction. A part of a message already stored, sent again
 * with the same text (its answer was lost to a crash or a dropped link), is answered and dropped:
 * it would otherwise wait for parts that never come and be stored as a fragment 60 s later.
 * Returns the message once it is complete, else null.
 */
export async function receiveCarrierInbound(ctx: Context, m: InboundCarrierMessage): Promise<InboundRow | null> {
  if (!m.part) return inboundBatcher(ctx).store({ from: m.from, to: m.to, message: m.text, encoding: m.encoding, segments: 1 });
  const { ref, total, seq } = m.part;
  const to = recipientKey(m.to);
  const groupKey = `${m.route}|${m.from}|${to}|${ref}|${total}`;
  const now = ctx.clock();
  const stored = await ctx.store.db.transaction().execute(async (trx) => {
    await lockPartGroup(trx, groupKey);
    let parts = await partsOfGroup(trx, groupKey);
    if (parts[0]?.seq === DONE_SEQ) {
      if (parts.some((p) => p.seq === seq && p.body === m.text)) return null;
      // Not a repeat: a new message that reuses the reference of one stored a while ago.
      await deletePartGroup(trx, groupKey);
      parts = [];
    }
    if (!parts.some((p) => p.seq === seq)) {
      const part: InboundPartRow = { group_key: groupKey, seq, total, sender: m.from, recipient: to, body: m.text, encoding: m.encoding, received_at: now };
      await insertPart(trx, part);
      parts = [...parts, part].sort((x, y) => x.seq - y.seq);
    }
    if (parts.length < total) return null;
    await markGroupDone(trx, parts[0]!, now);
    return storeInbound(trx, { from: m.from, to, message: parts.map((p) => p.body).join(''), encoding: parts[0]!.encoding, segments: total }, now);
  });
  return stored && (await afterStore(ctx, stored)).row;
}

/**
 * Stores the messages whose parts have waited longer than the reassembly timeout with the parts
 * that came, marked `incomplete`, and forgets the parts of messages stored long enough ago.
 * Returns how many messages it stored.
 */
export async function flushStaleParts(ctx: Context, limit = 100): Promise<number> {
  const now = ctx.clock();
  let count = 0;
  for (const groupKey of await staleGroups(ctx.store.db, now - REASSEMBLY_TIMEOUT_MS, limit)) {
    const stored = await ctx.store.db.transaction().execute(async (trx) => {
      await lockPartGroup(trx, groupKey);
      const parts = await partsOfGroup(trx, groupKey);
      // Completed (or flushed) by another process meanwhile.
      if (parts.length === 0 || parts[0]!.seq === DONE_SEQ) return null;
      await markGroupDone(trx, parts[0]!, now);
      const first = parts[0]!;
      return storeInbound(trx, { from: first.sender, to: first.recipient, message: parts.map((p) => p.body).join(''), encoding: first.encoding, segments: parts.length, incomplete: true }, now);
    });
    if (stored) {
      await afterStore(ctx, stored);
      count++;
    }
  }
  await deleteDoneGroups(ctx.store.db, now - DONE_PARTS_KEPT_MS);
  return count;
}

export interface SimulatedInbound {
  from: string;
  to: string;
  message: string;
}

function checkSimulated(input: SimulatedInbound): { from: string; to: string } {
  const from = parseRecipient(input.from.length > 32 ? '' : input.from);
  if (!from.ok) throw new AppError('invalid_recipient', `\`from\` is not a valid E.164 number: ${from.reason}`);
  const length = [...input.message].length;
  if (length === 0 || length > MAX_SIMULATED_CHARACTERS) {
    throw new AppError('invalid_message', length === 0 ? '`message` is empty.' : `\`message\` has ${length} characters; the maximum is ${MAX_SIMULATED_CHARACTERS}.`);
  }
  const to = parseOwnNumber(input.to.length > 32 ? '' : input.to);
  if (!to.ok) throw new AppError('not_found', `${JSON.stringify(input.to.slice(0, 40))} is not a number of this account.`);
  return { from: from.e164, to: to.number };
}

/**
 * The simulator's inbound message from the API (`POST /v1/simulator/inbound`): only with the
 * simulator as carrier, and only to one of the caller's own numbers (else `not_found`, which
 * reveals nothing about other accounts' numbers).
 */
export async function simulateInboundForAccount(ctx: Context, accountId: string, input: SimulatedInbound): Promise<InboundView> {
  if (ctx.config.carrier !== 'simulator') throw new AppError('not_found', 'The simulator is not this installation’s carrier (CARRIER is not `simulator`).');
  const { from, to } = checkSimulated(input);
  if (!(await ownedNumber(ctx.store, accountId, to))) throw new AppError('not_found', `${to} is not a number of this account.`);
  return inboundView((await receiveInbound(ctx, { from, to, message: input.message })).row);
}

/** The simulator's inbound message from the operator (`pigeon simulate inbound`): to any number, kept unrouted if nobody holds it. */
export async function simulateInbound(ctx: Context, input: SimulatedInbound): Promise<{ inbound: InboundView; routed: boolean; accountId: string | null }> {
  if (ctx.config.carrier !== 'simulator') throw new AppError('invalid_request', 'The simulator is not this installation’s carrier (CARRIER is not `simulator`).');
  const checked = (() => {
    try {
      return checkSimulated(input);
    } catch (e) {
      if (e instanceof AppError && e.code === 'not_found') throw new AppError('invalid_number', e.message.replace('is not a number of this account', 'is not a number (E.164 or a short code)'));
      throw e;
    }
  })();
  const { row, routed } = await receiveInbound(ctx, { from: checked.from, to: checked.to, message: input.message });
  return { inbound: inboundView(row), routed, accountId: row.account_id };
}

export async function listInbound(ctx: Context, filter: InboundFilter, limit: number, offset: number): Promise<{ rows: InboundView[]; total: number }> {
  const { rows, total } = await inboundPage(ctx.store.db, filter, limit, offset);
  return { rows: rows.map(inboundView), total };
}

/** The most recent unrouted messages (to numbers nobody held), newest first; at most `limit` (≤ 1000). */
export async function listUnrouted(ctx: Context, limit = 100): Promise<InboundView[]> {
  const rows = await unroutedInbound(ctx.store.db, Math.min(Math.max(1, limit), 1000));
  return rows.map(inboundView);
}

/** Turns the API's filters (E.164 or short code spellings, RFC 3339 times) into the stored forms. */
export function inboundFilter(accountId: string, q: { from?: string; to?: string; since?: string; until?: string }): InboundFilter {
  const time = (value: string | undefined, name: string): number | undefined => {
    if (value === undefined) return undefined;
    const ms = Date.parse(value);
    if (!/^\d{4}-\d\d-\d\d/.test(value) || Number.isNaN(ms)) {
      throw new AppError('invalid_request', `\`${name}\` is not an RFC 3339 date-time.`, { details: [{ field: name, code: 'invalid_request', message: 'must be an RFC 3339 date-time' }] });
    }
    return ms;
  };
  const from = q.from === undefined ? undefined : (() => {
    const parsed = parseRecipient(q.from);
    return parsed.ok ? parsed.e164 : q.from;
  })();
  return {
    accountId,
    ...(from !== undefined ? { from } : {}),
    ...(q.to !== undefined ? { to: recipientKey(q.to) } : {}),
    ...(q.since !== undefined ? { since: time(q.since, 'since') } : {}),
    ...(q.until !== undefined ? { until: time(q.until, 'until') } : {}),
  };
}

/** At most this many correspondents and messages per conversation are shown. */
export const INBOX_LIMIT = 100;
/** A conversation shows what was sent to the correspondent within this window. */
const CONVERSATION_WINDOW_MS = 30 * 24 * 3600_000;

export interface Correspondent {
  phone: string;
  lastAt: number;
  received: number;
}

/** The dashboard's inbox: who wrote to the account, most recent first; `search` matches a number or a text. */
export async function inbox(ctx: Context, accountId: string, search?: string): Promise<Correspondent[]> {
  const q = search?.trim().slice(0, 100) || undefined;
  return (await correspondents(ctx.store.db, accountId, q, INBOX_LIMIT)).map((r) => ({ phone: r.sender, lastAt: r.last_at, received: r.count }));
}

export interface ConversationEntry {
  direction: 'in' | 'out';
  /** The inbound message's or the message's id. */
  id: string;
  at: number;
  text: string;
  /** The account's number or Sender ID. */
  ours: string;
  /** For a message sent: its status. */
  status?: string;
}

/** One correspondent's conversation, newest first: what they sent and what was sent to them (the last 30 days of it). */
export async function conversation(ctx: Context, accountId: string, phone: string): Promise<ConversationEntry[]> {
  const received = await inboundFrom(ctx.store.db, accountId, phone, INBOX_LIMIT);
  const sent = await messagesTo(ctx.store.db, accountId, phone, ctx.clock() - CONVERSATION_WINDOW_MS, INBOX_LIMIT);
  const entries: ConversationEntry[] = [
    ...received.map((m) => ({ direction: 'in' as const, id: m.id, at: Number(m.received_at), text: m.body, ours: m.recipient })),
    ...sent.map((m) => ({ direction: 'out' as const, id: m.id, at: Number(m.created_at), text: m.body, ours: m.sender, status: m.status })),
  ];
  return entries.sort((a, b) => b.at - a.at).slice(0, INBOX_LIMIT);
}
