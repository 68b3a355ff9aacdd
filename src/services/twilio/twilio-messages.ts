/**
 * The Messages resource of the Twilio-compatible API (DECISIONS.md §12) over Pigeon's messages:
 * create through the one acceptance (`sendMessage`), list, fetch, cancel (`cancelScheduled`),
 * redact (`redactMessages`) and delete. A message's SID is computed from its id
 * (src/domain/twilio-sid.ts), so `/v1` and this API name the same message.
 */
import { isFinal, type MessageStatus } from '../../domain/message-status.ts';
import { parseRecipient } from '../../domain/phone-number.ts';
import { rfc2822, twilioErrorCode, twilioPrice, twilioStatus } from '../../domain/twilio-message.ts';
import { messageIdOfSid, messageSidOf } from '../../domain/twilio-sid.ts';
import { AppError } from '../../errors/catalogue.ts';
import { TwilioError } from '../../errors/twilio-catalogue.ts';
import type { MessagesTable } from '../../store/database.ts';
import { accountMessage, deleteMessageIfIn, twilioMessagesPage, type TwilioMessageFilter } from '../../store/repositories/messages.repository.ts';
import { retryingConflicts } from '../../store/retry-conflicts.ts';
import { cancelScheduled } from '../messages/cancel-messages.ts';
import { redactMessages } from '../messages/redact-messages.ts';
import { sendMessage, type SendInput } from '../messages/submit-messages.ts';
import { recordAudit } from '../audit/audit.ts';
import type { Context } from '../context.ts';
import { TWILIO_API_VERSION } from './callback-params.ts';
import type { TwilioCaller } from './credentials.ts';

/** A form parameter: repeated names (MediaUrl) arrive as a list. */
export type TwilioParams = Record<string, string | string[] | undefined>;

export interface TwilioMessage {
  sid: string;
  account_sid: string;
  from: string;
  to: string;
  body: string;
  status: string;
  num_segments: string;
  num_media: string;
  direction: 'outbound-api';
  api_version: string;
  price: string | null;
  price_unit: 'credits';
  error_code: number | null;
  error_message: string | null;
  date_created: string;
  date_updated: string;
  date_sent: string | null;
  uri: string;
  subresource_uris: { media: string };
}

export function messagesPath(accountSid: string): string {
  return `/${TWILIO_API_VERSION}/Accounts/${accountSid}/Messages`;
}

/** What the account paid for the message once final: nothing when refunded or free. */
function creditsCharged(row: MessagesTable): number {
  if (Number(row.charged ?? 1) === 0) return 0;
  if (row.status === 'canceled' || (row.status === 'failed' && row.sent_at === null)) return 0;
  return row.segments;
}

export function messageResource(row: MessagesTable, accountSid: string): TwilioMessage {
  const sid = messageSidOf(row.id) ?? row.id;
  const sentAt = row.sent_at === null ? null : Number(row.sent_at);
  const failed = row.status === 'failed';
  const base = `${messagesPath(accountSid)}/${sid}`;
  return {
    sid,
    account_sid: accountSid,
    from: row.sender,
    to: row.recipient,
    body: row.body,
    status: twilioStatus(row.status, sentAt),
    num_segments: String(row.segments),
    num_media: '0',
    direction: 'outbound-api',
    api_version: TWILIO_API_VERSION,
    price: isFinal(row.status) ? twilioPrice(creditsCharged(row)) : null,
    price_unit: 'credits',
    error_code: failed ? twilioErrorCode(row.error_code) : null,
    error_message: failed ? row.error_message : null,
    date_created: rfc2822(Number(row.created_at)),
    date_updated: rfc2822(Number(row.updated_at)),
    date_sent: sentAt === null ? null : rfc2822(sentAt),
    uri: `${base}.json`,
    subresource_uris: { media: `${base}/Media.json` },
  };
}

/** Twilio features Pigeon does not have: refused with a code rather than silently dropped. */
const UNSUPPORTED: Record<string, () => TwilioError> = {
  MediaUrl: () => new TwilioError(21620),
  SendAsMms: () => new TwilioError(21620),
  MessagingServiceSid: () => new TwilioError(21701),
  ContentSid: () => new TwilioError(20001, 'Content templates (ContentSid) are not supported: send the text in Body.'),
  ContentVariables: () => new TwilioError(20001, 'Content templates (ContentVariables) are not supported: send the text in Body.'),
  ApplicationSid: () => new TwilioError(20001, 'ApplicationSid is not supported: set StatusCallback on each message.'),
  PersistentAction: () => new TwilioError(20001, 'PersistentAction is not supported.'),
  MaxPrice: () => new TwilioError(20001, 'MaxPrice is not supported: a message costs one credit per segment.'),
};

export function single(params: TwilioParams, name: string): string | undefined {
  const value = params[name];
  if (Array.isArray(value)) throw new TwilioError(20001, `'${name}' was given more than once.`);
  return value;
}

const NOT_FOUND = () => new AppError('not_found', 'No message with this SID.');

async function messageBySid(ctx: Context, caller: TwilioCaller, sid: string): Promise<MessagesTable> {
  const id = messageIdOfSid(sid);
  const row = id === null ? undefined : await accountMessage(ctx.store.db, caller.accountId, id);
  if (!row) throw NOT_FOUND();
  return row;
}

/** `POST .../Messages.json`: 201 and the new message. */
export async function createTwilioMessage(ctx: Context, caller: TwilioCaller, params: TwilioParams): Promise<TwilioMessage> {
  for (const name of Object.keys(params)) {
    const refuse = UNSUPPORTED[name];
    if (refuse) throw refuse();
  }
  const to = single(params, 'To');
  const from = single(params, 'From');
  const body = single(params, 'Body');
  if (to === undefined || to === '') throw new TwilioError(21604);
  if (from === undefined || from === '') throw new TwilioError(21603);
  if (body === undefined || body === '') throw new TwilioError(21602);
  const input: SendInput = { to, from, message: body };
  const callback = single(params, 'StatusCallback');
  if (callback !== undefined && callback !== '') {
    input.callback_url = callback;
    input.callback_format = 'twilio';
  }
  const validity = single(params, 'ValidityPeriod');
  if (validity !== undefined) {
    // Not a whole number: the one rule's own refusal (`validValidityPeriod`) explains the range.
    input.validity_period = /^[0-9]{1,9}$/.test(validity) ? Number(validity) : Number.NaN;
  }
  // DECISIONS.md §16: Twilio's link shortening is Pigeon's tracked links.
  const shorten = single(params, 'ShortenUrls');
  if (shorten !== undefined) {
    if (shorten !== 'true' && shorten !== 'false') throw new TwilioError(20001, "ShortenUrls must be 'true' or 'false'.");
    if (shorten === 'true') input.track_links = true;
  }
  const sendAt = single(params, 'SendAt');
  const scheduleType = single(params, 'ScheduleType');
  if (sendAt !== undefined) {
    if (scheduleType !== 'fixed') throw new TwilioError(35111);
    input.send_at = sendAt;
  } else if (scheduleType !== undefined) {
    throw new TwilioError(20001, "ScheduleType needs a SendAt.");
  }
  const sent = await sendMessage(ctx, caller.sender, input);
  ctx.wake('dispatch');
  const row = await accountMessage(ctx.store.db, caller.accountId, sent.message_id);
  if (!row) throw new AppError('internal_error');
  return messageResource(row, caller.accountSid);
}

/** `GET .../Messages/{Sid}.json`. */
export async function fetchTwilioMessage(ctx: Context, caller: TwilioCaller, sid: string): Promise<TwilioMessage> {
  return messageResource(await messageBySid(ctx, caller, sid), caller.accountSid);
}

/** `POST .../Messages/{Sid}.json`: `Status=canceled` cancels a scheduled message, `Body=` redacts a final one. */
export async function updateTwilioMessage(ctx: Context, caller: TwilioCaller, sid: string, params: TwilioParams): Promise<TwilioMessage> {
  const row = await messageBySid(ctx, caller, sid);
  const status = single(params, 'Status');
  const body = single(params, 'Body');
  if (status === undefined && body === undefined) throw new TwilioError(20001, "Give Status=canceled to cancel, or an empty Body to redact.");
  if (status !== undefined) {
    if (status !== 'canceled') throw new TwilioError(20001, "The only Status a message can be given is 'canceled'.");
    await cancelScheduled(ctx, caller.accountId, { messageId: row.id });
  }
  if (body !== undefined) {
    if (body !== '') throw new TwilioError(20001, 'A message body can only be redacted (Body set to the empty string), not changed.');
    try {
      await redactMessages(ctx, caller.accountId, { messageId: row.id });
    } catch (error) {
      if (error instanceof AppError && error.code === 'not_redactable') throw new TwilioError(20009, 'Only a message in a final state (delivered, undelivered, failed, canceled) can be redacted.');
      throw error;
    }
  }
  return fetchTwilioMessage(ctx, caller, sid);
}

const FINAL: readonly MessageStatus[] = ['delivered', 'failed', 'canceled'];

/** `DELETE .../Messages/{Sid}.json`: only a message in a final state. */
export async function deleteTwilioMessage(ctx: Context, caller: TwilioCaller, sid: string): Promise<void> {
  const id = messageIdOfSid(sid);
  if (id === null) throw NOT_FOUND();
  const status = await retryingConflicts(() =>
    ctx.store.db.transaction().execute(async (trx) => {
      const found = await deleteMessageIfIn(trx, caller.accountId, id, FINAL);
      if (found !== undefined && FINAL.includes(found)) await recordAudit(ctx, { action: 'message.deleted', accountId: caller.accountId, target: { type: 'message', id }, changes: { status: [found, null] } }, trx);
      return found;
    }),
  );
  if (status === undefined) throw NOT_FOUND();
  if (!FINAL.includes(status)) throw new TwilioError(20009);
}

export interface TwilioListQuery {
  To?: string;
  From?: string;
  DateSent?: string;
  'DateSent<'?: string;
  'DateSent>'?: string;
  PageSize?: string;
  Page?: string;
  PageToken?: string;
}

export interface TwilioMessagePage {
  messages: TwilioMessage[];
  uri: string;
  first_page_uri: string;
  next_page_uri: string | null;
  previous_page_uri: string | null;
  page: number;
  page_size: number;
  start: number;
  end: number;
}

const DAY_MS = 86_400_000;

/** A date (`YYYY-MM-DD`, the whole UTC day) or a date-time, as [from, until) in milliseconds. */
function dateRange(value: string, name: string): { from: number; until: number } {
  const dateOnly = /^\d{4}-\d\d-\d\d$/.test(value);
  const ms = Date.parse(dateOnly ? `${value}T00:00:00Z` : value);
  if (!/^\d{4}-\d\d-\d\d/.test(value) || Number.isNaN(ms)) throw new TwilioError(20001, `'${name}' is not a date (YYYY-MM-DD) or an ISO 8601 date-time.`);
  return dateOnly ? { from: ms, until: ms + DAY_MS } : { from: ms, until: ms + 1 };
}

function whole(value: string | undefined, name: string, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^[0-9]{1,7}$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new TwilioError(20001, `'${name}' must be a whole number from ${min} to ${max.toLocaleString('en')}.`);
  }
  return Number(value);
}

/** `GET .../Messages.json`: newest first, with Twilio's paging keys. */
export async function listTwilioMessages(ctx: Context, caller: TwilioCaller, query: TwilioListQuery): Promise<TwilioMessagePage> {
  const pageSize = whole(query.PageSize, 'PageSize', 1, 1000, 50);
  const page = whole(query.Page, 'Page', 0, 1_000_000, 0);
  const filter: TwilioMessageFilter = { accountId: caller.accountId };
  const kept = new URLSearchParams();
  if (query.To !== undefined) {
    const parsed = parseRecipient(query.To);
    filter.recipient = parsed.ok ? parsed.e164 : query.To;
    kept.set('To', query.To);
  }
  if (query.From !== undefined) {
    filter.sender = query.From;
    kept.set('From', query.From);
  }
  const narrow = (from: number | undefined, until: number | undefined) => {
    if (from !== undefined) filter.sentFrom = Math.max(filter.sentFrom ?? from, from);
    if (until !== undefined) filter.sentUntil = Math.min(filter.sentUntil ?? until, until);
  };
  for (const name of ['DateSent', 'DateSent<', 'DateSent>'] as const) {
    const value = query[name];
    if (value === undefined) continue;
    const range = dateRange(value, name);
    // On or before / on or after, as Twilio reads them.
    if (name === 'DateSent') narrow(range.from, range.until);
    else if (name === 'DateSent<') narrow(undefined, range.until);
    else narrow(range.from, undefined);
    kept.set(name, value);
  }
  let offset = page * pageSize;
  if (query.PageToken !== undefined) {
    // `PA` and the SID of the last message of the page before: the next page starts after it, so
    // messages sent meanwhile do not shift it.
    const id = /^PA/.test(query.PageToken) ? messageIdOfSid(query.PageToken.slice(2)) : null;
    const last = id === null ? undefined : await accountMessage(ctx.store.db, caller.accountId, id);
    if (!last) throw new TwilioError(20001, "'PageToken' is not one this API gave.");
    filter.before = { createdAt: Number(last.created_at), id: last.id };
    offset = 0;
  }
  const rows = await twilioMessagesPage(ctx.store.db, filter, pageSize + 1, offset);
  const more = rows.length > pageSize;
  const messages = rows.slice(0, pageSize).map((r) => messageResource(r, caller.accountSid));
  const path = `${messagesPath(caller.accountSid)}.json`;
  const uriOf = (extra: Record<string, string>) => {
    const q = new URLSearchParams(kept);
    for (const [k, v] of Object.entries(extra)) q.set(k, v);
    return `${path}?${q.toString()}`;
  };
  const current: Record<string, string> = { PageSize: String(pageSize), Page: String(page) };
  if (query.PageToken !== undefined) current.PageToken = query.PageToken;
  const start = page * pageSize;
  const lastSid = messages.at(-1)?.sid;
  return {
    messages,
    uri: uriOf(current),
    first_page_uri: uriOf({ PageSize: String(pageSize), Page: '0' }),
    next_page_uri: more && lastSid ? uriOf({ PageSize: String(pageSize), Page: String(page + 1), PageToken: `PA${lastSid}` }) : null,
    previous_page_uri: page > 0 ? uriOf({ PageSize: String(pageSize), Page: String(page - 1) }) : null,
    page,
    page_size: pageSize,
    start,
    end: messages.length > 0 ? start + messages.length - 1 : start,
  };
}
