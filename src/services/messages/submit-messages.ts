/**
 * The one submit use-case behind `POST /sms/send` and `POST /sms/bulk` (and any later entry
 * point): validate, count segments, then debit the credits, store the messages and enqueue their
 * dispatch in one transaction, so a message is never charged without being stored nor stored
 * without being charged.
 */
import { AppError, type ErrorCode } from '../../errors/catalogue.ts';
import { parseRecipient } from '../../domain/phone-number.ts';
import { segmentMessage, type Encoding } from '../../domain/segmentation.ts';
import { checkSendAt, validValidityPeriod } from '../../domain/scheduling.ts';
import type { LinksTable, MessagesTable } from '../../store/database.ts';
import type { SmppMessageRow } from '../../store/repositories/smpp-outbox.repository.ts';
import type { Executor } from '../../store/connect.ts';
import { creditBalance } from '../../store/repositories/ledger.repository.ts';
import { newId } from '../../util/ids.ts';
import { approvedSenderName, grantRefusalNow, optedOutRecipients } from '../auth/access.ts';
import { acceptanceBatcher, type Acceptance, type AccessGrant } from './acceptance-batcher.ts';
import { accessSnapshot, type AccessSnapshot } from '../auth/access-cache.ts';
import { checkBacklog } from './backlog.ts';
import { destinationRule, type DestinationRule } from '../accounts/account-limits.ts';
import type { Context } from '../context.ts';
import { priceRule, type PriceRule } from '../pricing/pricing.ts';
import type { Finish } from './idempotency.ts';
import { heldUntilAt, holdAtAcceptance } from './quiet-hours-hold.ts';
import { linkRows, trackedText, trackedTextOrThrow } from '../links/links.ts';

export const MAX_MESSAGE_CHARACTERS = 1600;
/** The longest `to` looked at (DECISIONS.md §9): E.164's 15 digits with visual separators. */
export const MAX_RECIPIENT_CHARACTERS = 32;

export interface ValidEntry {
  to: string;
  e164: string;
  body: string;
  encoding: Encoding;
  segments: number;
  /** The destination's price at acceptance, and `segments` times it: what the message is charged. */
  creditsPerSegment: number;
  credits: number;
  /** With `track_links`: the links `body` has as short links (DECISIONS.md §16). */
  links?: { code: string; url: string }[];
}

export type EntryCheck = { ok: true; entry: ValidEntry } | { ok: false; code: ErrorCode; message: string };

function countCharacters(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

export function checkEntry(to: string, body: string, destinations: DestinationRule, prices: PriceRule, recipient?: ReturnType<typeof parseRecipient>): EntryCheck {
  if (to.length > MAX_RECIPIENT_CHARACTERS) {
    return { ok: false, code: 'invalid_recipient', message: `\`to\` has ${to.length} characters; the maximum is ${MAX_RECIPIENT_CHARACTERS}.` };
  }
  recipient ??= parseRecipient(to);
  if (!recipient.ok) return { ok: false, code: 'invalid_recipient', message: `\`to\` is not a valid E.164 number: ${recipient.reason}` };
  const refused = destinations?.(recipient.e164);
  if (refused) return { ok: false, code: 'destination_not_allowed', message: refused };
  const price = prices(recipient.e164);
  if (!price.ok) return price;
  // Each character is one or two UTF-16 units: past twice the limit, no need to count them.
  const length = body.length > 2 * MAX_MESSAGE_CHARACTERS ? Infinity : countCharacters(body);
  if (length === 0 || length > MAX_MESSAGE_CHARACTERS) {
    return {
      ok: false,
      code: 'invalid_message',
      message:
        length === 0
          ? '`message` is empty.'
          : length === Infinity
            ? `\`message\` is longer than ${MAX_MESSAGE_CHARACTERS} characters.`
            : `\`message\` has ${length} characters; the maximum is ${MAX_MESSAGE_CHARACTERS}.`,
    };
  }
  const { encoding, segments } = segmentMessage(body);
  return { ok: true, entry: { to, e164: recipient.e164, body, encoding, segments, creditsPerSegment: price.creditsPerSegment, credits: segments * price.creditsPerSegment } };
}

/**
 * Checks each entry with the account's destination list as `access` has it. A refusal by that list
 * taken from a snapshot not read for this request is not trusted at once: if the access revision
 * moved since, the entries are checked again on the current snapshot, so a country allowed
 * elsewhere meanwhile is never refused from an old entry (what `decideAccess` does for keys,
 * Sender IDs and accounts, access-cache.ts).
 */
async function checkEntries(
  ctx: Context,
  accountId: string,
  access: AccessSnapshot | undefined,
  prices: PriceRule,
  entries: readonly { to: string; message: string; recipient?: ReturnType<typeof parseRecipient> }[],
): Promise<EntryCheck[]> {
  const check = (destinations: DestinationRule) => entries.map((e) => checkEntry(e.to, e.message, destinations, prices, e.recipient));
  let checks = check(await destinationRule(ctx, accountId, access));
  if (access && !access.checked && checks.some((c) => !c.ok && c.code === 'destination_not_allowed')) {
    const current = await accessSnapshot(ctx.store);
    if (current.revision !== access.revision) checks = check(await destinationRule(ctx, accountId, current));
  }
  return checks;
}

/** Returns the URL when it is an absolute https:// URL. */
function checkCallbackUrl(url: string | undefined): string | null {
  if (url === undefined) return null;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new AppError('invalid_callback_url', '`callback_url` is not an absolute URL.');
  }
  if (parsed.protocol !== 'https:') throw new AppError('invalid_callback_url', '`callback_url` must use https://.');
  if (parsed.username || parsed.password) throw new AppError('invalid_callback_url', '`callback_url` must not carry credentials.');
  if (url.length > 2048) throw new AppError('invalid_callback_url', '`callback_url` is longer than 2,048 characters.');
  return url;
}

/** The delivery events a `callback_url` may be limited to, in the order they are stored. */
export const CALLBACK_EVENTS = ['sms.sent', 'sms.delivered', 'sms.failed'] as const;

/**
 * `callback_events` as a message stores it: null when none is named or all three are (every event,
 * the spec's default), else the names chosen, comma-separated in the order of CALLBACK_EVENTS.
 * Refused with `invalid_request` without a `callback_url`, empty, or naming anything else.
 */
export function checkCallbackEvents(events: readonly string[] | undefined, callbackUrl: string | null): string | null {
  if (events === undefined) return null;
  const invalid = (message: string) => new AppError('invalid_request', `\`callback_events\` ${message}.`, { details: [{ field: 'callback_events', code: 'invalid_request', message }] });
  if (callbackUrl === null) throw invalid('needs a `callback_url`');
  if (events.length === 0) throw invalid('must name at least one event');
  if (events.some((e) => !(CALLBACK_EVENTS as readonly string[]).includes(e))) throw invalid(`may name only ${CALLBACK_EVENTS.join(', ')}`);
  const chosen = CALLBACK_EVENTS.filter((e) => events.includes(e));
  return chosen.length === CALLBACK_EVENTS.length ? null : chosen.join(',');
}

/** When and for how long a send's messages go out (DECISIONS.md §8). */
export interface Timing {
  /** `scheduled` until `sendAt`, or `pending` (dispatch at once). */
  status: 'scheduled' | 'pending';
  sendAt: number | null;
  validityPeriod: number | null;
  expiresAt: number | null;
  /** What the answer adds: `send_at` (UTC) and `validity_period`, when the request gave them. */
  echo: { send_at?: string; validity_period?: number };
}

/**
 * Checks `send_at` and `validity_period`. A `send_at` within the clock skew is kept as given
 * (and echoed) but sends at once; the validity period counts from the later of `send_at` and now.
 */
export function timingOf(input: { send_at?: string; validity_period?: number }, now: number): Timing {
  let sendAt: number | null = null;
  let immediate = true;
  if (input.send_at !== undefined) {
    const check = checkSendAt(input.send_at, now);
    if (!check.ok) {
      throw new AppError('invalid_send_at', check.reason, { details: [{ field: 'send_at', code: 'invalid_send_at', message: check.reason }] });
    }
    sendAt = check.at;
    immediate = check.immediate;
  }
  const vp = input.validity_period;
  if (vp !== undefined && !validValidityPeriod(vp)) {
    const reason = '`validity_period` must be a whole number of seconds from 60 to 259,200.';
    throw new AppError('invalid_validity_period', reason, { details: [{ field: 'validity_period', code: 'invalid_validity_period', message: reason }] });
  }
  const echo: Timing['echo'] = {};
  if (sendAt !== null) echo.send_at = new Date(sendAt).toISOString();
  if (vp !== undefined) echo.validity_period = vp;
  return {
    status: immediate ? 'pending' : 'scheduled',
    sendAt,
    validityPeriod: vp ?? null,
    expiresAt: vp === undefined ? null : Math.max(sendAt ?? now, now) + vp * 1000,
    echo,
  };
}

export function messageRow(accountId: string, batchId: string | null, sender: string, entry: ValidEntry, callbackUrl: string | null, timing: Timing, now: number): MessagesTable {
  return {
    id: newId('msg', now),
    account_id: accountId,
    batch_id: batchId,
    recipient: entry.e164,
    sender,
    body: entry.body,
    encoding: entry.encoding,
    segments: entry.segments,
    status: timing.status,
    callback_url: callbackUrl,
    carrier_message_id: null,
    error_code: null,
    error_message: null,
    created_at: now,
    sent_at: null,
    delivered_at: null,
    updated_at: now,
    send_at: timing.sendAt,
    validity_period: timing.validityPeriod,
    expires_at: timing.expiresAt,
    // Every row carries these columns, whatever the send asked for: the rows of a group's
    // acceptances go in one insert, whose columns are its first row's (insert-rows.ts).
    callback_format: null,
    callback_events: null,
    category: null,
    held_until: null,
    credits: entry.credits,
  };
}

/**
 * Debits, stores and enqueues in one transaction (shared with concurrent acceptances: see
 * acceptance-batcher.ts), and builds the response from the new balance inside it, so that
 * `finish` (the idempotency record) commits with the send. Throws `service_unavailable` or
 * `rate_limit_exceeded` when the send would take the dispatch backlog, or the account's part of
 * it, over its bound (backlog.ts), `insufficient_credits`, `daily_limit_reached` (a bulk
 * that would cross the account's daily cap is refused whole, as one the balance does not cover),
 * all with nothing written.
 */
export async function accept<R>(ctx: Context, acceptance: Acceptance<R>): Promise<R> {
  // Scheduled messages join the dispatch queue only when released, and marketing messages held by
  // quiet hours at theirs: they do not count here.
  const now = acceptance.rows.filter((r) => r.status === 'pending' && r.held_until == null).length;
  const finished = now > 0 ? await checkBacklog(ctx, acceptance.accountId, now) : undefined;
  try {
    return await acceptanceBatcher(ctx).accept(acceptance);
  } finally {
    finished?.();
  }
}

async function balanceOf(ctx: Context, accountId: string): Promise<number> {
  return creditBalance(ctx.store.db, accountId);
}

/**
 * Who sends: the account, and for an API request the key and the access snapshot it was
 * authenticated with (for a submit over SMPP, the snapshot alone); the acceptance is then checked
 * again at commit if access changed since.
 */
export interface Sender {
  accountId: string;
  keyId?: string;
  access?: AccessSnapshot;
}

function grantOf(sender: Sender, from: string): AccessGrant | undefined {
  if (!sender.access) return undefined;
  return { revision: sender.access.revision, ...(sender.keyId !== undefined ? { keyId: sender.keyId } : {}), from };
}

/** The optional parts of an acceptance: the access grant to check at commit, the idempotency record. */
function withGrant(sender: Sender, from: string, finish: Finish | undefined): Pick<Acceptance<unknown>, 'access' | 'finish'> {
  const access = grantOf(sender, from);
  return { ...(access ? { access } : {}), ...(finish ? { finish } : {}) };
}

export interface SendInput {
  to: string;
  from: string;
  message: string;
  callback_url?: string;
  /** The delivery events `callback_url` gets (CALLBACK_EVENTS); every one when absent. */
  callback_events?: string[];
  send_at?: string;
  validity_period?: number;
  /** `twilio`: the callback URL gets Twilio's form-encoded status callbacks (DECISIONS.md §12). */
  callback_format?: 'twilio';
  category?: 'transactional' | 'marketing';
  /** Every http(s) URL of the text becomes a short link of its own (DECISIONS.md §16). */
  track_links?: boolean;
}

export interface SendResult {
  status: 'success';
  message_id: string;
  to: string;
  from: string;
  segments: number;
  encoding: Encoding;
  credits_used: number;
  credits_remaining: number;
  send_at?: string;
  validity_period?: number;
  /** A marketing message's quiet-hours hold: the window's next opening (ISO), or null when it goes at once. */
  held_until?: string | null;
}

/** What a send result or a bulk entry says of the hold: only for marketing messages. */
function heldUntilOf(row: MessagesTable): { held_until?: string | null } {
  if (row.category !== 'marketing') return {};
  return { held_until: row.held_until == null ? null : new Date(Number(row.held_until)).toISOString() };
}

/**
 * What an entry point other than the API adds to a send: the message's id when the caller had to
 * name it before the acceptance (SMPP answers the earlier parts of a long message with ids derived
 * from it), and rows of its own written in the acceptance's transaction.
 */
export interface SendOptions {
  messageId?: string;
  write?: (trx: Executor, message: MessagesTable) => Promise<void>;
  /** With `write`: whether it has anything to write, once admitted (acceptance-batcher.ts). */
  writes?: () => boolean;
  /** Rows of other tables written with the message, the group's as one insert per table (acceptance-batcher.ts). */
  beside?: (message: MessagesTable) => Acceptance<unknown>['beside'];
  /** Whether the message goes in, decided in its acceptance's transaction before the debit (acceptance-batcher.ts). */
  admit?: Acceptance<unknown>['admit'];
  /** With `admit`: what it decides on, locked before the group's admissions (acceptance-batcher.ts). */
  admitLock?: string;
  /** With `admit`: the read its group shares, one call for all of them (acceptance-batcher.ts). */
  admitRead?: Acceptance<unknown>['admitRead'];
  /** A message accepted over SMPP: what its receipts need, written beside it (acceptance-batcher.ts). */
  smppMessage?: SmppMessageRow;
  /**
   * The text to store in place of the one sent (a verification's, its code masked): the message is
   * checked, segmented and priced by the text the carrier gets, which `write` keeps for dispatch.
   */
  storedBody?: string;
}

/** Every check of a single send, in order; what `sendMessage` accepts and `quoteMessage` prices. */
async function checkSend(ctx: Context, sender: Sender, input: SendInput) {
  const { accountId } = sender;
  const recipient = parseRecipient(input.to);
  if (!recipient.ok) throw new AppError('invalid_recipient', `\`to\` is not a valid E.164 number: ${recipient.reason}`);
  const from = await approvedSenderName(ctx, accountId, input.from, sender.access);
  const tracked = input.track_links ? trackedTextOrThrow(ctx, input.message) : null;
  const message = tracked ? tracked.text : input.message;
  const check = (await checkEntries(ctx, accountId, sender.access, await priceRule(ctx, accountId), [{ to: input.to, message, recipient }]))[0]!;
  if (!check.ok) throw new AppError(check.code, check.message);
  if (tracked) check.entry.links = tracked.links;
  if ((await optedOutRecipients(ctx, accountId, [check.entry.e164], sender.access)).size > 0) {
    throw new AppError('recipient_opted_out', `${check.entry.e164} opted out of messages from this account (they replied STOP, or were added to its opt-out list).`);
  }
  const callbackUrl = checkCallbackUrl(input.callback_url);
  const callbackEvents = checkCallbackEvents(input.callback_events, callbackUrl);
  const now = ctx.clock();
  const timing = timingOf(input, now);
  return { from, check, callbackUrl, callbackEvents, now, timing };
}

export interface QuoteResult {
  segments: number;
  encoding: Encoding;
  credits_per_segment: number;
  credits: number;
  /** Marketing only: when the quiet-hours window opens, if the message would be held until then; null when not. */
  held_until?: string | null;
}

/**
 * `POST /v1/sms/quote`: what the send would cost, refused as it would be; nothing stored or
 * debited. A marketing message also says whether quiet hours would hold it, at the time it would
 * go: now, or its `send_at`.
 */
export async function quoteMessage(ctx: Context, sender: Sender, input: SendInput): Promise<QuoteResult> {
  const { check, now, timing } = await checkSend(ctx, sender, input);
  const quote: QuoteResult = { segments: check.entry.segments, encoding: check.entry.encoding, credits_per_segment: check.entry.creditsPerSegment, credits: check.entry.credits };
  if (input.category === 'marketing') {
    const held = await heldUntilAt(ctx.store.db, sender.accountId, check.entry.e164, timing.status === 'scheduled' && timing.sendAt !== null ? timing.sendAt : now);
    quote.held_until = held === null ? null : new Date(held).toISOString();
  }
  return quote;
}

export async function sendMessage(ctx: Context, sender: Sender, input: SendInput, finish?: Finish, options: SendOptions = {}): Promise<SendResult> {
  const { accountId } = sender;
  const { from, check, callbackUrl, callbackEvents, now, timing } = await checkSend(ctx, sender, input);
  const row = messageRow(accountId, null, from, check.entry, callbackUrl, timing, now);
  row.callback_events = callbackEvents;
  if (options.messageId !== undefined) row.id = options.messageId;
  if (options.storedBody !== undefined) row.body = options.storedBody;
  if (input.callback_format !== undefined && callbackUrl !== null) row.callback_format = input.callback_format;
  if (input.category === 'marketing') row.category = 'marketing';
  const releaseAt = await holdAtAcceptance(ctx.store.db, accountId, [row], now);
  const links = check.entry.links ? linkRows(row, check.entry.links, now) : [];
  return accept(ctx, {
    accountId,
    rows: [row],
    ...(releaseAt ? { releaseAt } : {}),
    ...(links.length > 0 ? { links } : {}),
    ...(options.write ? { write: (trx: Executor) => options.write!(trx, row), ...(options.writes ? { writes: options.writes } : {}) } : {}),
    ...(options.beside ? { beside: options.beside(row) } : {}),
    ...(options.admit ? { admit: options.admit, ...(options.admitLock !== undefined ? { admitLock: options.admitLock } : {}), ...(options.admitRead ? { admitRead: options.admitRead } : {}) } : {}),
    ...(options.smppMessage ? { smppMessage: options.smppMessage } : {}),
    ...(row.callback_format || row.callback_events || row.category ? { wholeRows: true } : {}),
    reference: row.id,
    credits: check.entry.credits,
    batch: null,
    respond: (remaining): SendResult => ({
      status: 'success',
      message_id: row.id,
      to: input.to,
      from,
      segments: row.segments,
      encoding: row.encoding,
      credits_used: check.entry.credits,
      credits_remaining: remaining,
      ...timing.echo,
      ...heldUntilOf(row),
    }),
    ...withGrant(sender, input.from, finish),
  });
}

export interface BulkInput {
  from: string;
  messages: { to: string; message: string }[];
  callback_url?: string;
  /** The delivery events `callback_url` gets for each message (CALLBACK_EVENTS); every one when absent. */
  callback_events?: string[];
  send_at?: string;
  validity_period?: number;
  category?: 'transactional' | 'marketing';
  /** Every http(s) URL of each text becomes a short link of its own (DECISIONS.md §16). */
  track_links?: boolean;
}

export interface BulkResult {
  status: 'success';
  batch_id: string;
  total: number;
  queued: number;
  credits_used: number;
  credits_remaining: number;
  send_at?: string;
  validity_period?: number;
  messages: { index: number; message_id: string; to: string; segments: number; encoding: Encoding; held_until?: string | null }[];
  errors: { index: number; to: string; code: string; message: string }[];
}

export async function sendBulk(ctx: Context, sender: Sender, input: BulkInput, finish?: Finish): Promise<BulkResult> {
  const { accountId } = sender;
  const max = ctx.config.bulkMaxMessages;
  if (input.messages.length > max) {
    throw new AppError('too_many_messages', `A bulk request carries at most ${max} messages; this one has ${input.messages.length}.`);
  }
  if (input.messages.length === 0) {
    throw new AppError('invalid_request', '`messages` must contain at least one message.', {
      details: [{ field: 'messages', code: 'invalid_request', message: 'must contain at least one message' }],
    });
  }
  const from = await approvedSenderName(ctx, accountId, input.from, sender.access);
  const prices = await priceRule(ctx, accountId);
  const callbackUrl = checkCallbackUrl(input.callback_url);
  const callbackEvents = checkCallbackEvents(input.callback_events, callbackUrl);
  const now = ctx.clock();
  const timing = timingOf(input, now);
  const batchId = newId('bat', now);
  const rows: MessagesTable[] = [];
  const accepted: BulkResult['messages'] = [];
  const errors: BulkResult['errors'] = [];
  const links: LinksTable[] = [];
  let credits = 0;
  // With `track_links` each entry's text is rewritten (its own codes) before it is checked and priced.
  const tracked = input.track_links ? input.messages.map((m) => trackedText(ctx, m.message)) : null;
  const entries = tracked ? input.messages.map((m, i) => { const t = tracked[i]!; return { to: m.to, message: t.ok ? t.rewritten.text : m.message }; }) : input.messages;
  const checks = await checkEntries(ctx, accountId, sender.access, prices, entries);
  const optedOut = await optedOutRecipients(
    ctx,
    accountId,
    checks.flatMap((c) => (c.ok ? [c.entry.e164] : [])),
    sender.access,
  );
  input.messages.forEach((m, index) => {
    let check = checks[index]!;
    const t = tracked?.[index];
    if (t && !t.ok && check.ok) check = t;
    if (check.ok && optedOut.has(check.entry.e164)) {
      check = { ok: false, code: 'recipient_opted_out', message: `${check.entry.e164} opted out of messages from this account.` };
    }
    if (!check.ok) {
      // An over-long `to` is echoed cut short: the answer (and its idempotency record) stays small.
      const to = m.to.length > MAX_RECIPIENT_CHARACTERS ? `${m.to.slice(0, MAX_RECIPIENT_CHARACTERS)}…` : m.to;
      errors.push({ index, to, code: check.code, message: check.message });
      return;
    }
    const row = messageRow(accountId, batchId, from, check.entry, callbackUrl, timing, now);
    row.callback_events = callbackEvents;
    if (input.category === 'marketing') row.category = 'marketing';
    if (t?.ok) links.push(...linkRows(row, t.rewritten.links, now));
    rows.push(row);
    accepted.push({ index, message_id: row.id, to: m.to, segments: row.segments, encoding: row.encoding });
    credits += check.entry.credits;
  });
  const releaseAt = await holdAtAcceptance(ctx.store.db, accountId, rows, now);
  if (input.category === 'marketing') accepted.forEach((entry, i) => Object.assign(entry, heldUntilOf(rows[i]!)));
  const respond = (remaining: number): BulkResult => ({
    status: 'success',
    batch_id: batchId,
    total: input.messages.length,
    queued: rows.length,
    credits_used: credits,
    credits_remaining: remaining,
    ...timing.echo,
    messages: accepted,
    errors,
  });
  if (rows.length > 0) {
    return accept(ctx, {
      accountId,
      rows,
      reference: batchId,
      credits,
      batch: { id: batchId, total: input.messages.length },
      ...(links.length > 0 ? { links } : {}),
      respond,
      ...(releaseAt ? { releaseAt } : {}),
      // Only the general path writes the category and callback_events columns; other bulks keep the fast one.
      ...(input.category === 'marketing' || callbackEvents !== null ? { wholeRows: true } : {}),
      ...withGrant(sender, input.from, finish),
    });
  }
  // Nothing valid: nothing to debit or store, but the answer is still remembered for the key; the
  // access check that a commit would have made is made here.
  const grant = grantOf(sender, input.from);
  if (grant) {
    const refusal = await grantRefusalNow(ctx.store.db, accountId, grant);
    if (refusal) throw refusal;
  }
  const response = respond(await balanceOf(ctx, accountId));
  if (finish) await ctx.store.db.transaction().execute((trx) => finish(trx, { status: 200, body: response }));
  return response;
}
