/**
 * Opt-outs (DECISIONS.md §8): keywords in inbound messages (STOP, START, HELP and their synonyms),
 * the opt-out list API, the confirmations sent back (free, at most 5 a day per recipient and
 * number, sent even at 0 credits or when suspended) and the `recipient.opted_out` /
 * `recipient.opted_in` events. A change moves the access revision (migration 013), and this
 * process reads it at once, so its next send sees the change.
 */
import type { Transaction } from 'kysely';
import { AppError } from '../../errors/catalogue.ts';
import { parseRecipient } from '../../domain/phone-number.ts';
import { segmentMessage } from '../../domain/segmentation.ts';
import type { Database, MessagesTable, OptOutSource } from '../../store/database.ts';
import { enqueueJobs } from '../../store/repositories/jobs.repository.ts';
import { insertRows } from '../../store/insert-rows.ts';
import { deleteOptOut, insertOptOut, optOutRow, optOutsPage, takeReplySlot, type OptOutRow } from '../../store/repositories/opt-outs.repository.ts';
import { findAccount, setAccountHelpText } from '../../store/repositories/accounts.repository.ts';
import { readAccessRevision } from '../../store/repositories/api-keys.repository.ts';
import { iso } from '../../util/ids.ts';
import { observeAccessRevision } from '../auth/access-cache.ts';
import { recordAudit } from '../audit/audit.ts';
import type { Context } from '../context.ts';
import { queueAccountEvent } from '../webhooks/account-events.ts';
import { utcDay } from '../accounts/account-limits.ts';
import { messageRow, type Timing } from '../messages/submit-messages.ts';

/** A confirmation goes at once, with the carrier's own validity. */
const AT_ONCE: Timing = { status: 'pending', sendAt: null, validityPeriod: null, expiresAt: null, echo: {} };

const STOP = new Set(['STOP', 'STOPALL', 'UNSUBSCRIBE', 'CANCEL', 'END', 'QUIT', 'OPTOUT', 'REVOKE']);
const START = new Set(['START', 'UNSTOP', 'YES']);
const HELP = new Set(['HELP', 'INFO']);
/** Confirmations per recipient and number per UTC day. */
export const MAX_REPLIES_PER_DAY = 5;
export const MAX_HELP_TEXT = 320;

export type Keyword = 'stop' | 'start' | 'help';

/** The keyword a whole message is (trimmed, any case), or null. */
export function keywordOf(text: string): Keyword | null {
  if (text.length > 32) return null;
  const word = text.trim().toUpperCase();
  if (STOP.has(word)) return 'stop';
  if (START.has(word)) return 'start';
  if (HELP.has(word)) return 'help';
  return null;
}

export function defaultReply(keyword: Keyword, accountName: string): string {
  switch (keyword) {
    case 'stop':
      return `You are unsubscribed from ${accountName}. No more messages will be sent. Reply START to resubscribe.`;
    case 'start':
      return `You are resubscribed to ${accountName}. Reply STOP to unsubscribe.`;
    case 'help':
      return `${accountName}: reply STOP to unsubscribe.`;
  }
}

/** Queues a free confirmation from `number` to `phone`, unless the day's cap is reached. */
async function queueReply(trx: Transaction<Database>, accountId: string, number: string, phone: string, text: string, now: number): Promise<string | null> {
  if (!(await takeReplySlot(trx, number, phone, utcDay(now), MAX_REPLIES_PER_DAY))) return null;
  const { encoding, segments } = segmentMessage(text);
  // Not charged: sent even at 0 credits, never refunded, never refused at dispatch.
  const row: MessagesTable = { ...messageRow(accountId, null, number, { to: phone, e164: phone, body: text, encoding, segments, creditsPerSegment: 0, credits: 0 }, null, AT_ONCE, now), charged: 0 };
  await insertRows(trx, 'messages', [row]);
  await enqueueJobs(trx, [{ queue: 'dispatch', accountId, ref: row.id, runAt: now }], now);
  return row.id;
}

export interface KeywordHolder {
  account_id: string;
  name: string;
  events_url: string | null;
  help_text: string | null;
}

/**
 * Applies the keyword an inbound message is, if any, in the transaction that stores it (after its
 * `sms.received` event): the opt-out list, the event, the confirmation. Returns whether the
 * opt-out list changed (the caller then reads the new access revision).
 */
export async function applyKeyword(
  trx: Transaction<Database>,
  holder: KeywordHolder,
  inbound: { id: string; sender: string; recipient: string; body: string },
  now: number,
): Promise<{ keyword: Keyword | null; changed: boolean; replyId: string | null }> {
  const keyword = keywordOf(inbound.body);
  if (!keyword) return { keyword, changed: false, replyId: null };
  const phone = parseRecipient(inbound.sender);
  // A keyword from an address that is not a phone number (an alphanumeric sender) changes nothing.
  if (!phone.ok) return { keyword, changed: false, replyId: null };
  let changed = false;
  if (keyword === 'stop') {
    changed = await insertOptOut(trx, { account_id: holder.account_id, phone: phone.e164, source: 'keyword', number: inbound.recipient, created_at: now });
    if (!changed) {
      // Already opted out through the API or the operator: now it is the recipient's own, which only START lifts.
      const existing = await optOutRow(trx, holder.account_id, phone.e164);
      if (existing && existing.source !== 'keyword') {
        await deleteOptOut(trx, holder.account_id, phone.e164);
        await insertOptOut(trx, { ...existing, source: 'keyword', number: inbound.recipient });
      }
    }
  } else if (keyword === 'start') {
    changed = await deleteOptOut(trx, holder.account_id, phone.e164);
  }
  if (changed) {
    const event = keyword === 'stop' ? 'recipient.opted_out' : 'recipient.opted_in';
    await queueAccountEvent(trx, holder, event, { phone: phone.e164, number: inbound.recipient, source: 'keyword' }, now, inbound.id);
  }
  let replyId: string | null = null;
  if (changed || keyword === 'help') {
    const text = keyword === 'help' && holder.help_text ? holder.help_text : defaultReply(keyword, holder.name);
    replyId = await queueReply(trx, holder.account_id, inbound.recipient, phone.e164, text, now);
  }
  return { keyword, changed, replyId };
}

/** After a change to the opt-out list: this process's access cache moves to the new revision at once. */
export async function observeOptOutChange(ctx: Context): Promise<void> {
  observeAccessRevision(ctx.store, await readAccessRevision(ctx.store));
}

export interface OptOutView {
  phone: string;
  source: OptOutSource;
  created_at: string;
}

function view(row: OptOutRow): OptOutView {
  return { phone: row.phone, source: row.source, created_at: iso(Number(row.created_at)) };
}

function phoneOf(input: string): string {
  const parsed = parseRecipient(input.length > 32 ? '' : input);
  if (!parsed.ok) throw new AppError('invalid_recipient', `\`phone\` is not a valid E.164 number: ${parsed.reason}`);
  return parsed.e164;
}

export async function listOptOuts(ctx: Context, accountId: string, phone: string | undefined, limit: number, offset: number): Promise<{ rows: OptOutView[]; total: number }> {
  const filterPhone = phone === undefined ? undefined : (() => {
    const parsed = parseRecipient(phone.length > 32 ? '' : phone);
    return parsed.ok ? parsed.e164 : phone;
  })();
  const { rows, total } = await optOutsPage(ctx.store.db, { accountId, ...(filterPhone !== undefined ? { phone: filterPhone } : {}) }, limit, offset);
  return { rows: rows.map(view), total };
}

/** Adds a recipient to the account's list (`api` or `operator`); `created` is false when it was there already. */
export async function addOptOut(ctx: Context, accountId: string, input: string, source: 'api' | 'operator'): Promise<{ optOut: OptOutView; created: boolean }> {
  const phone = phoneOf(input);
  const now = ctx.clock();
  const result = await ctx.store.db.transaction().execute(async (trx) => {
    const account = await findAccount(trx, accountId);
    if (!account) throw new AppError('not_found', `No account ${accountId}.`);
    const created = await insertOptOut(trx, { account_id: accountId, phone, source, number: null, created_at: now });
    if (created) await queueAccountEvent(trx, { account_id: accountId, events_url: account.events_url }, 'recipient.opted_out', { phone, number: null, source }, now, null);
    if (created) await recordAudit(ctx, { action: 'opt_out.added', accountId, target: { type: 'opt_out', id: phone }, changes: { phone: [null, phone], source: [null, source] } }, trx);
    return { created, row: (await optOutRow(trx, accountId, phone))! };
  });
  if (result.created) {
    await observeOptOutChange(ctx);
    ctx.wake('webhook');
  }
  return { optOut: view(result.row), created: result.created };
}

/** Removes a recipient from the list: `not_found` if absent, `opt_out_by_recipient` if they opted out by keyword. */
export async function removeOptOut(ctx: Context, accountId: string, input: string, source: 'api' | 'operator'): Promise<void> {
  const phone = phoneOf(input);
  const now = ctx.clock();
  await ctx.store.db.transaction().execute(async (trx) => {
    const row = await optOutRow(trx, accountId, phone);
    if (!row) throw new AppError('not_found', `${phone} is not on the opt-out list.`);
    if (row.source === 'keyword') throw new AppError('opt_out_by_recipient', `${phone} opted out by replying STOP; only their START lifts it.`);
    await deleteOptOut(trx, accountId, phone);
    const account = await findAccount(trx, accountId);
    await queueAccountEvent(trx, { account_id: accountId, events_url: account?.events_url ?? null }, 'recipient.opted_in', { phone, number: null, source }, now, null);
    await recordAudit(ctx, { action: 'opt_out.removed', accountId, target: { type: 'opt_out', id: phone }, changes: { phone: [phone, null], source: [row.source, null] } }, trx);
  });
  await observeOptOutChange(ctx);
  ctx.wake('webhook');
}

/** Sets the account's reply to HELP (trimmed; empty: back to the default text). */
export async function setHelpText(ctx: Context, accountId: string, text: string): Promise<string | null> {
  const value = text.trim() || null;
  if (value !== null && [...value].length > MAX_HELP_TEXT) throw new AppError('invalid_message', `The help text has at most ${MAX_HELP_TEXT} characters.`);
  await ctx.store.db.transaction().execute(async (trx) => {
    const before = await findAccount(trx, accountId);
    if (!before || !(await setAccountHelpText(trx, accountId, value))) throw new AppError('not_found', `No account ${accountId}.`);
    if (before.help_text !== value) await recordAudit(ctx, { action: 'account.help_text_changed', accountId, target: { type: 'account', id: accountId }, changes: { help_text: [before.help_text, value] } }, trx);
  });
  return value;
}
