/**
 * Campaigns from the dashboard's composer: a file of recipients (a column of phone numbers, found
 * by its usual names or chosen by the owner, and any others), a template filled per row, one
 * Sender ID, sent now or at a local time in the owner's time zone.
 *
 * Files are contact lists as people export them: numbers without a `+` are national numbers of
 * the campaign's default country (national-number.ts), and a number repeated in the file gets one
 * message (the first row's) unless the owner asks for every row. An optional "Reply STOP to opt
 * out" line is added to each message before it is checked, so the preview's segments and cost
 * include it.
 *
 * `readCampaign` streams the file once, checks every row as the API would check a message (the
 * recipient, the destination rules, the text once filled) and keeps what the preview shows: the
 * first rows, every invalid row with its line and reason (the first `LISTED_INVALID_ROWS` listed,
 * all of them counted), the rows whose recipient opted out of the account (listed and counted the
 * same way, skipped: DECISIONS.md §8), the cost in credits and the balance. Opt-outs are looked up
 * per `OPT_OUT_LOOKUP_ROWS` valid rows as the file streams: a few queries per file, never the
 * account's whole list in memory. `sendCampaign` reads it again with
 * the rows kept and accepts them in one acceptance (see acceptance-batcher.ts): one debit for the
 * whole campaign, split into batches of at most `BULK_MAX_MESSAGES`, all stored or none. Reading
 * the file again at send re-checks the opt-outs, so a recipient who opted out after the preview is
 * skipped too. One who opts out in the instant between that read and the commit is not a reason
 * to refuse the whole campaign: the message is stored, then fails `recipient_opted_out` at its
 * release or dispatch and is refunded (send-time-checks.ts). The
 * composer form's key is stored with the campaign in that transaction, unique per account: the
 * same form posted twice finds the campaign it made.
 */
import { AppError } from '../../errors/catalogue.ts';
import { fillTemplate, OPT_OUT_LINE, rowValues, unknownPlaceholders } from '../../domain/message-template.ts';
import { isTimeZone, localTimeToInstant } from '../../domain/local-time.ts';
import { countryByCode, countryOfNumber, readPhoneNumber } from '../../domain/national-number.ts';
import type { Encoding } from '../../domain/segmentation.ts';
import { csvLine } from '../../domain/csv-cell.ts';
import type { MessageStatus } from '../../domain/message-status.ts';
import type { LinksTable, MessagesTable } from '../../store/database.ts';
import { isUniqueViolation } from '../../store/dialect.ts';
import { creditBalance } from '../../store/repositories/ledger.repository.ts';
import { listNumberRows } from '../../store/repositories/numbers.repository.ts';
import { optedOutAmong } from '../../store/repositories/opt-outs.repository.ts';
import {
  campaignBatchIds,
  campaignById,
  campaignByFormKey,
  campaignDeliveries,
  campaignFailures,
  campaignResultsPage,
  campaignStatusCounts,
  campaignCanceledCredits,
  campaignDefaults,
  insertCampaign,
  saveCampaignDefaults,
  listCampaignRows,
  setOwnerTimeZone,
  type CampaignRow,
} from '../../store/repositories/campaigns.repository.ts';
import { newId } from '../../util/ids.ts';
import { randomToken } from '../auth/sessions.ts';
import { accountMayUseApi, approvedSenderName } from '../auth/access.ts';
import { destinationRule } from '../accounts/account-limits.ts';
import { priceRule, type PriceRule } from '../pricing/pricing.ts';
import { listSenderIds } from '../sender-ids/sender-ids.ts';
import { accept, checkEntry, messageRow, timingOf, type ValidEntry } from '../messages/submit-messages.ts';
import { holdAtAcceptance, openings } from '../messages/quiet-hours-hold.ts';
import { accountWindow } from '../accounts/quiet-hours.ts';
import { linkRows, messageClicks, trackedText } from '../links/links.ts';
import { cancelScheduled } from '../messages/cancel-messages.ts';
import { columnList, readCampaignCsv, type CampaignFileSummary } from './campaign-file.ts';
import { readCampaignXlsx } from './campaign-xlsx.ts';
import { abortable, accountFileReads, fileReads, type FileReadPurpose } from './file-reads.ts';
import { recordAudit } from '../audit/audit.ts';
import type { Context } from '../context.ts';

/** Data rows of one campaign file. */
export const CAMPAIGN_MAX_ROWS = 100_000;
/** Bytes of one campaign file. */
export const CAMPAIGN_MAX_BYTES = 20 * 1024 * 1024;
/** Characters of a template (placeholders included; the filled text is checked per row). */
export const MAX_TEMPLATE_CHARACTERS = 4000;
/** Rows shown in the preview. */
export const PREVIEW_ROWS = 5;
/** Invalid rows listed by line (all are counted); the same for rows to opted-out recipients. */
export const LISTED_INVALID_ROWS = 500;
/** Valid rows whose recipients are looked up in the opt-out list in one query. */
export const OPT_OUT_LOOKUP_ROWS = 1000;
/** Rows checked between two turns of the event loop. */
const YIELD_EVERY_ROWS = 250;
/** Characters of a campaign's name. */
export const MAX_CAMPAIGN_NAME_CHARACTERS = 100;

export type Campaign = CampaignRow;

export interface CampaignInput {
  sender: string;
  template: string;
}

/** How the composer reads the file's rows into messages. */
export interface CampaignReading {
  /** The header of the recipient column the owner chose; absent, it is found by its name. */
  recipientColumn?: string | null;
  /** ISO 3166-1 alpha-2: numbers without `+` are national numbers of it; absent, they are refused. */
  country?: string | null;
  /** Send a message for every row, even when its number repeats an earlier row's. */
  everyRow?: boolean;
  /** Add `OPT_OUT_LINE` to each message. */
  optOutLine?: boolean;
  /** `marketing`: held outside the recipients' quiet-hours window (DECISIONS.md §16); absent, transactional. */
  category?: 'transactional' | 'marketing';
  /** When the campaign would go, for the preview's count of held recipients; absent, now. */
  sendAt?: number;
  /** Replace each message's links by tracked short links (DECISIONS.md §16). */
  trackLinks?: boolean;
}

export interface InvalidRow {
  line: number;
  to: string;
  reason: string;
}

/** A row skipped because its recipient opted out of the account. */
export interface OptedOutRow {
  line: number;
  /** The recipient, in E.164. */
  to: string;
}

export interface PreviewRow {
  line: number;
  /** The recipient, normalised (E.164). */
  to: string;
  /** The number as the file writes it. */
  written: string;
  text: string;
  encoding: Encoding;
  segments: number;
}

export interface CampaignDraft {
  sender: string;
  template: string;
  /** The uploaded file's name, as the browser gave it. */
  fileName: string;
  file: CampaignFileSummary;
  /** The recipient column's header. */
  recipientColumn: string;
  /** The country national numbers were read in (alpha-2), or null. */
  country: string | null;
  everyRow: boolean;
  optOutLine: boolean;
  /** The messages' links are tracked: texts, segments and credits are those of the short links. */
  trackLinks: boolean;
  /** Valid rows whose number an earlier row of the file already has. */
  duplicateCount: number;
  /** Of those, the rows skipped (all of them, unless every row is sent). */
  duplicatesSkipped: number;
  preview: PreviewRow[];
  invalid: InvalidRow[];
  invalidCount: number;
  /** Valid rows whose recipient opted out (the first `LISTED_INVALID_ROWS`), skipped. */
  optedOut: OptedOutRow[];
  optedOutCount: number;
  /** Valid rows to recipients who did not opt out: the messages the campaign would send. */
  messages: number;
  credits: number;
  balance: number;
  category: 'transactional' | 'marketing';
  /**
   * A marketing campaign's recipients outside their quiet-hours window at the time it would go,
   * and when the last of their windows opens (null when none is held).
   */
  held: { count: number; until: number | null; from: number | null };
  /** The valid rows themselves, when asked for (to send). */
  entries: ValidEntry[];
}

/** The composer form's key: random, so that one form makes one campaign. */
export function newCampaignFormKey(): string {
  return randomToken();
}

const FORM_KEY = /^[A-Za-z0-9_-]{16,64}$/;

function checkTemplate(template: string): void {
  if (template.trim() === '') throw new AppError('invalid_request', 'Write the message template.');
  if (template.length > MAX_TEMPLATE_CHARACTERS) {
    throw new AppError('invalid_request', `The template has ${template.length.toLocaleString('en')} characters; the maximum is ${MAX_TEMPLATE_CHARACTERS.toLocaleString('en')}.`);
  }
}

export interface ReadCampaignOptions {
  /** A preview keeps no rows and gives way to a newer preview; a send keeps the valid rows (`entries`). */
  purpose: FileReadPurpose;
  format?: 'csv' | 'xlsx';
  fileName?: string;
  reading?: CampaignReading;
}

/**
 * Reads a campaign file (CSV, streamed; or XLSX, its first sheet) against a template and a Sender ID. Throws
 * `invalid_request` for what refuses the whole file (see campaign-file.ts, and a placeholder
 * that names no column), `sender_id_not_allowed` / `invalid_sender_id` for the Sender ID,
 * `campaign_file_busy` when a newer preview of the account replaced this one (or too many sends of
 * the account wait), `service_unavailable` when the process reads as many files as it may and as
 * many wait (file-reads.ts).
 */
export async function readCampaign(
  ctx: Context,
  accountId: string,
  input: CampaignInput,
  source: AsyncIterable<Uint8Array | string>,
  { purpose, format = 'csv', fileName = '', reading = {} }: ReadCampaignOptions,
): Promise<CampaignDraft> {
  checkTemplate(input.template);
  if (reading.country && !countryByCode(reading.country)) throw new AppError('invalid_request', `${reading.country} is not a country this server knows; choose one in the list.`);
  const sender = await approvedSenderName(ctx, accountId, input.sender);
  const destinations = await destinationRule(ctx, accountId);
  const prices = await priceRule(ctx, accountId);
  // The account's turn first, then a place among the process's reads: a replaced preview leaves
  // both at once, even while its upload stalls.
  const turn = await accountFileReads.enter(accountId, purpose);
  try {
    const release = await fileReads.acquire(turn.signal);
    try {
      const rows = abortable(source, turn.signal);
      const draft = await readCampaignRows(ctx, accountId, { sender, template: input.template }, reading, destinations, prices, rows, purpose === 'send', format, turn.signal);
      return { ...draft, fileName };
    } finally {
      release();
    }
  } finally {
    turn.leave();
  }
}

async function readCampaignRows(
  ctx: Context,
  accountId: string,
  input: CampaignInput,
  reading: CampaignReading,
  destinations: Awaited<ReturnType<typeof destinationRule>>,
  prices: PriceRule,
  source: AsyncIterable<Uint8Array | string>,
  keepEntries: boolean,
  format: 'csv' | 'xlsx',
  signal: AbortSignal,
): Promise<Omit<CampaignDraft, 'fileName'>> {
  const sender = input.sender;
  const country = countryByCode(reading.country)?.code ?? null;
  const everyRow = reading.everyRow === true;
  const optOutLine = reading.optOutLine === true;
  const category = reading.category === 'marketing' ? 'marketing' : 'transactional';
  const openingOf = category === 'marketing' ? openings(await accountWindow(ctx.store.db, accountId), reading.sendAt ?? ctx.clock()) : null;
  const held: CampaignDraft['held'] = { count: 0, until: null, from: null };
  const trackLinks = reading.trackLinks === true;
  // Every number met, to find the rows that repeat one: at most one per row of the file.
  const seen = new Set<string>();
  let duplicateCount = 0;
  let duplicatesSkipped = 0;
  const preview: PreviewRow[] = [];
  const invalid: InvalidRow[] = [];
  const entries: ValidEntry[] = [];
  const optedOut: OptedOutRow[] = [];
  let optedOutCount = 0;
  let invalidCount = 0;
  let messages = 0;
  let credits = 0;
  let headers: string[] = [];
  let toColumn = 0;
  let toHeader = '';
  let sinceYield = 0;
  const refuseRow = (line: number, to: string, reason: string) => {
    invalidCount++;
    if (invalid.length < LISTED_INVALID_ROWS) invalid.push({ line, to: to.length > 40 ? `${to.slice(0, 40)}…` : to, reason });
  };
  // Valid rows wait here, in file order, until their recipients are looked up together.
  let waiting: { line: number; written: string; text: string; entry: ValidEntry }[] = [];
  const settle = async () => {
    if (waiting.length === 0) return;
    const rows = waiting;
    waiting = [];
    const stopped = await optedOutAmong(ctx.store.db, accountId, rows.map((r) => r.entry.e164));
    for (const { line, written, text, entry } of rows) {
      if (stopped.has(entry.e164)) {
        optedOutCount++;
        if (optedOut.length < LISTED_INVALID_ROWS) optedOut.push({ line, to: entry.e164 });
        continue;
      }
      messages++;
      credits += entry.credits;
      const opening = openingOf?.(entry.e164);
      if (opening) {
        held.count++;
        held.until = Math.max(held.until ?? 0, opening.opensAt);
        held.from = Math.min(held.from ?? Infinity, opening.opensAt);
      }
      if (preview.length < PREVIEW_ROWS) preview.push({ line, to: entry.e164, written, text, encoding: entry.encoding, segments: entry.segments });
      if (keepEntries) entries.push(entry);
    }
  };
  const file = await (format === 'xlsx' ? readCampaignXlsx : readCampaignCsv)(
    source,
    { maxRows: CAMPAIGN_MAX_ROWS, maxBytes: CAMPAIGN_MAX_BYTES, recipientColumn: reading.recipientColumn ?? null },
    async ({ line, cells }) => {
      signal.throwIfAborted();
      // The rows of a chunk (64 KiB: some 2,700 rows) are checked on one task otherwise, 30 to
      // 250 ms during which no other request of the process is answered.
      if (++sinceYield >= YIELD_EVERY_ROWS) {
        sinceYield = 0;
        await new Promise((resolve) => setImmediate(resolve));
      }
      const to = (cells[toColumn] ?? '').trim();
      if (to === '') return refuseRow(line, to, `The \`${toHeader}\` cell is empty.`);
      const filled = fillTemplate(input.template, rowValues(headers, cells)).text;
      const written = optOutLine ? `${filled}\n${OPT_OUT_LINE}` : filled;
      // Each row's links get codes of their own; the preview shows one row's as it will go.
      const tracked = trackLinks ? trackedText(ctx, written) : null;
      if (tracked && !tracked.ok) return refuseRow(line, to, tracked.message.replaceAll('`message`', 'The filled message').replace('`track_links`', 'link tracking'));
      const text = tracked ? tracked.rewritten.text : written;
      const number = readPhoneNumber(to, country);
      // A national number that cannot be read says so in its own words; one with its `+` is
      // refused in the API's words for `to`.
      if (!number.ok && number.national) return refuseRow(line, to, number.reason);
      const check = checkEntry(to, text, destinations, prices, number.ok ? { ok: true, e164: number.e164 } : { ok: false, reason: number.reason });
      if (!check.ok) return refuseRow(line, to, check.message.replaceAll('`message`', 'The filled message'));
      if (tracked) check.entry.links = tracked.rewritten.links;
      if (seen.has(check.entry.e164)) {
        duplicateCount++;
        if (!everyRow) {
          duplicatesSkipped++;
          return;
        }
      } else seen.add(check.entry.e164);
      waiting.push({ line, written: to, text, entry: check.entry });
      if (waiting.length >= OPT_OUT_LOOKUP_ROWS) await settle();
    },
    (h, column) => {
      headers = h;
      toColumn = column;
      toHeader = h[column] ?? '';
      const unknown = unknownPlaceholders(input.template, h);
      if (unknown.length > 0) {
        throw new AppError(
          'invalid_request',
          `The template names ${unknown.map((p) => `{{${p}}}`).join(', ')}, which the file has no column for. Its columns are: ${columnList(h, 20)}.`,
        );
      }
    },
    signal,
  );
  await settle();
  return {
    sender,
    template: input.template,
    file,
    recipientColumn: toHeader,
    country,
    everyRow,
    optOutLine,
    trackLinks,
    duplicateCount,
    duplicatesSkipped,
    preview,
    invalid,
    invalidCount,
    optedOut,
    optedOutCount,
    messages,
    credits,
    balance: await creditBalance(ctx.store.db, accountId),
    category,
    held,
    entries,
  };
}

export interface SendCampaignInput {
  account: { id: string; status: string };
  ownerId: string;
  formKey: string;
  /** The owner's name for the campaign; empty, the file's name and the date. */
  name?: string;
  /** `YYYY-MM-DDTHH:MM` in `timeZone`, or absent to send now. */
  sendAtLocal?: string;
  timeZone?: string;
}

/** What a send did: the campaign, and whether this form had already made it (nothing new). */
export interface SentCampaign {
  campaign: Campaign;
  repeated: boolean;
}

/** The campaign a composer form already made, if it did. */
export async function campaignOfForm(ctx: Context, accountId: string, formKey: string): Promise<Campaign | undefined> {
  if (!FORM_KEY.test(formKey)) return undefined;
  return campaignByFormKey(ctx.store.db, accountId, formKey);
}

/**
 * Accepts a read campaign (`readCampaign` with the entries kept): all of its messages debited and
 * stored in one transaction, or none. Throws `invalid_request` (no valid row, a bad form key),
 * `invalid_send_at` (a local time that does not exist or exists twice, in the past, too far
 * ahead), `account_suspended`, `insufficient_credits`, `daily_limit_reached`,
 * `service_unavailable` (the dispatch backlog is full, for a campaign sent now).
 */
export async function sendCampaign(ctx: Context, draft: CampaignDraft, input: SendCampaignInput): Promise<SentCampaign> {
  const accountId = input.account.id;
  if (!FORM_KEY.test(input.formKey)) throw new AppError('invalid_request', 'The form is incomplete; reload the page and try again.');
  const existing = await campaignByFormKey(ctx.store.db, accountId, input.formKey);
  if (existing) return { campaign: existing, repeated: true };
  if (!accountMayUseApi(input.account.status)) throw new AppError('account_suspended');
  if (draft.messages === 0 || draft.entries.length !== draft.messages) {
    throw new AppError('invalid_request', draft.optedOutCount > 0 ? 'No row of the file can be sent: see the invalid rows and the recipients who opted out.' : 'No row of the file can be sent: see the invalid rows.');
  }
  const now = ctx.clock();
  let sendAt: string | undefined;
  let timeZone: string | null = null;
  if (input.sendAtLocal !== undefined) {
    const zone = input.timeZone ?? '';
    const local = localTimeToInstant(input.sendAtLocal, zone);
    if (!local.ok) throw new AppError('invalid_send_at', local.reason, { details: [{ field: 'send_at', code: 'invalid_send_at', message: local.reason }] });
    sendAt = new Date(local.at).toISOString();
    timeZone = zone;
  }
  const timing = timingOf(sendAt === undefined ? {} : { send_at: sendAt }, now);
  const name = campaignName(input.name ?? '', draft.fileName, now, timeZone);
  const campaignId = newId('cmp', now);
  const size = ctx.config.bulkMaxMessages;
  const rows: MessagesTable[] = [];
  const links: LinksTable[] = [];
  const batches: { id: string; total: number; queued: number; credits: number }[] = [];
  for (let start = 0; start < draft.entries.length; start += size) {
    const part = draft.entries.slice(start, start + size);
    const batchId = newId('bat', now);
    let credits = 0;
    for (const entry of part) {
      const row = messageRow(accountId, batchId, draft.sender, entry, null, timing, now);
      if (draft.category === 'marketing') row.category = 'marketing';
      if (entry.links) links.push(...linkRows(row, entry.links, now));
      rows.push(row);
      credits += entry.credits;
    }
    batches.push({ id: batchId, total: part.length, queued: part.length, credits });
  }
  const releaseAt = await holdAtAcceptance(ctx.store.db, accountId, rows, now);
  const campaign: CampaignRow = {
    id: campaignId,
    account_id: accountId,
    form_key: input.formKey,
    sender: draft.sender,
    template: draft.template,
    file_rows: draft.file.rows,
    invalid_rows: draft.invalidCount,
    messages: rows.length,
    credits: draft.credits,
    send_at: timing.sendAt,
    time_zone: timeZone,
    created_at: now,
    name,
    duplicate_rows: draft.duplicatesSkipped,
    opt_out_line: draft.optOutLine ? 1 : 0,
    category: draft.category === 'marketing' ? 'marketing' : null,
    track_links: draft.trackLinks ? 1 : 0,
  };
  try {
    await accept(ctx, {
      accountId,
      rows,
      ...(releaseAt ? { releaseAt } : {}),
      reference: campaignId,
      credits: draft.credits,
      batch: null,
      campaign: { id: campaignId, batches },
      ...(links.length > 0 ? { links } : {}),
      respond: () => null,
      // The campaign row commits with its messages; its unique form key refuses a second one.
      write: async (trx) => {
        await insertCampaign(trx, campaign);
        // The template is message text: never in the log.
        await recordAudit(
          ctx,
          {
            action: 'campaign.created',
            accountId,
            target: { type: 'campaign', id: campaignId },
            changes: { name: [null, campaign.name], sender: [null, campaign.sender], messages: [null, campaign.messages], credits: [null, campaign.credits], send_at: [null, campaign.send_at === null ? null : new Date(Number(campaign.send_at)).toISOString()] },
          },
          trx,
        );
      },
    });
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    const made = await campaignByFormKey(ctx.store.db, accountId, input.formKey);
    if (!made) throw err;
    return { campaign: made, repeated: true };
  }
  // The zone scheduled in is the one the owner chose (or the browser's they kept): the next default.
  if (timeZone !== null) await saveOwnerTimeZone(ctx, input.ownerId, timeZone);
  // The country this file was read in is the next file's default, and so is the column the owner
  // chose; a column found by its name changes nothing remembered.
  await saveCampaignDefaults(ctx.store.db, accountId, { country: draft.country, ...(draft.file.toColumnHow === 'chosen' ? { recipient_column: draft.recipientColumn } : {}) }, now);
  return { campaign, repeated: false };
}

/**
 * The campaign's name: the owner's (trimmed; at most `MAX_CAMPAIGN_NAME_CHARACTERS`), or the
 * file's name and the date it is made on, in the zone it is scheduled in (UTC when sent now).
 */
export function campaignName(given: string, fileName: string, now: number, timeZone: string | null): string {
  const name = given.trim().replace(/\s+/g, ' ');
  if (name.length > MAX_CAMPAIGN_NAME_CHARACTERS) {
    throw new AppError('invalid_request', `The campaign name has ${name.length} characters; the maximum is ${MAX_CAMPAIGN_NAME_CHARACTERS}.`);
  }
  if (name !== '') return name;
  const date = new Intl.DateTimeFormat('en-CA', { timeZone: timeZone ?? 'UTC', year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(now));
  const file = fileName.trim().slice(0, MAX_CAMPAIGN_NAME_CHARACTERS - 11) || 'Campaign';
  return `${file} ${date}`;
}

/** What the composer offers for the next file: the country (remembered, or guessed) and the recipient column last used. */
export interface ComposerDefaults {
  country: string | null;
  /** How `country` was decided: the owner's last campaign, or a guess from the account's numbers. */
  countryFrom: 'remembered' | 'numbers' | null;
  recipientColumn: string | null;
}

export async function composerDefaults(ctx: Context, accountId: string): Promise<ComposerDefaults> {
  const saved = await campaignDefaults(ctx.store.db, accountId);
  if (saved) return { country: countryByCode(saved.country)?.code ?? null, countryFrom: 'remembered', recipientColumn: saved.recipient_column };
  const guessed = await guessCountry(ctx, accountId);
  return { country: guessed ?? null, countryFrom: guessed ? 'numbers' : null, recipientColumn: null };
}

/**
 * The country of the account's own numbers (assigned by the operator) or numeric Sender IDs, when
 * one has a country: most businesses text their own country. Undefined lets the browser's
 * language guess instead (app.js).
 */
async function guessCountry(ctx: Context, accountId: string): Promise<string | undefined> {
  for (const { number } of await listNumberRows(ctx.store.db, { accountId })) {
    const country = number.startsWith('+') ? countryOfNumber(number) : undefined;
    if (country) return country;
  }
  for (const { name } of await listSenderIds(ctx, { accountId, status: 'approved' })) {
    const country = /^[1-9]\d{7,14}$/.test(name) ? countryOfNumber(`+${name}`) : undefined;
    if (country) return country;
  }
  return undefined;
}

/** Saves the owner's time zone (an IANA name), as the composer's default: when they pick one, and when they schedule in one. */
export async function saveOwnerTimeZone(ctx: Context, ownerId: string, zone: string): Promise<void> {
  if (!isTimeZone(zone)) throw new AppError('invalid_request', `${zone} is not a known time zone.`);
  await setOwnerTimeZone(ctx.store.db, ownerId, zone);
}

/** Rows of the campaign's file skipped because their recipient had opted out (neither stored nor debited). */
export function optedOutSkipped(campaign: Campaign): number {
  // Every data row is either invalid, a message, a repeated number skipped, or skipped for an opt-out.
  return Math.max(0, Number(campaign.file_rows) - Number(campaign.invalid_rows) - Number(campaign.messages) - Number(campaign.duplicate_rows ?? 0));
}

export async function listCampaigns(ctx: Context, accountId: string, limit = 100): Promise<Campaign[]> {
  return listCampaignRows(ctx.store.db, accountId, limit);
}

export async function getCampaign(ctx: Context, accountId: string, id: string): Promise<Campaign> {
  const campaign = id.length <= 100 ? await campaignById(ctx.store.db, accountId, id) : undefined;
  if (!campaign) throw new AppError('not_found', 'No campaign with this id.');
  return campaign;
}

export interface CampaignProgress {
  counts: Partial<Record<MessageStatus, number>>;
  failures: { code: string; count: number }[];
  /** Deliveries per minute: start of the minute (ms) and count. */
  deliveries: { at: number; count: number }[];
}

export async function campaignProgress(ctx: Context, accountId: string, id: string): Promise<CampaignProgress> {
  const db = ctx.store.db;
  const [counts, failures, deliveries] = [await campaignStatusCounts(db, accountId, id), await campaignFailures(db, accountId, id), await campaignDeliveries(db, accountId, id, 60_000)];
  return { counts, failures, deliveries };
}

/** Credits given back for the campaign's canceled messages (0 while none is). */
export async function campaignRefundedOnCancel(ctx: Context, accountId: string, id: string, progress: CampaignProgress): Promise<number> {
  return (progress.counts.canceled ?? 0) > 0 ? campaignCanceledCredits(ctx.store.db, accountId, id) : 0;
}

/**
 * Cancels what of the campaign is still scheduled, batch by batch through the batch cancel
 * (each batch's refund is its own ledger row). Throws `not_cancelable` when nothing was.
 */
export async function cancelCampaign(ctx: Context, accountId: string, id: string): Promise<{ canceled: number; credits: number }> {
  await getCampaign(ctx, accountId, id);
  let canceled = 0;
  let credits = 0;
  for (const batchId of await campaignBatchIds(ctx.store.db, accountId, id)) {
    try {
      const result = await cancelScheduled(ctx, accountId, { batchId });
      canceled += result.data.canceled.length;
      credits += result.data.credits_refunded;
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'not_cancelable') throw err;
    }
  }
  if (canceled === 0) throw new AppError('not_cancelable', 'Nothing of this campaign is still scheduled: it was already released to dispatch, or canceled.');
  await recordAudit(ctx, { action: 'campaign.canceled', accountId, target: { type: 'campaign', id }, changes: { canceled: [null, canceled], credits_refunded: [null, credits] } });
  return { canceled, credits };
}

const RESULT_COLUMNS = ['message_id', 'batch_id', 'to', 'status', 'segments', 'encoding', 'error_code', 'error_message', 'created_at', 'send_at', 'sent_at', 'delivered_at', 'clicks', 'campaign', 'category', 'held_until'];

/** What a campaign is called in the dashboard: its name, or its id for those made before names. */
export function campaignTitle(campaign: Campaign): string {
  return campaign.name ?? campaign.id;
}
const iso = (ms: number | null) => (ms === null ? '' : new Date(Number(ms)).toISOString());

/** The campaign's per-message results as CSV lines, read a page at a time (cells escaped: csv-cell.ts). */
export async function* campaignResultsCsv(ctx: Context, accountId: string, id: string): AsyncGenerator<string> {
  const campaign = await getCampaign(ctx, accountId, id);
  const title = campaignTitle(campaign);
  const category = campaign.category === 'marketing' ? 'marketing' : 'transactional';
  // `clicks`: the message's counted clicks on its tracked links; empty when links were not tracked.
  const tracked = Number(campaign.track_links ?? 0) === 1;
  yield csvLine(RESULT_COLUMNS);
  let after: string | null = null;
  for (;;) {
    const page = await campaignResultsPage(ctx.store.db, accountId, id, after, 1000);
    if (page.length === 0) return;
    const clicks = tracked ? await messageClicks(ctx, page.map((m) => m.id)) : null;
    let chunk = '';
    for (const m of page) {
      const clicked = clicks === null ? '' : (clicks.get(m.id) ?? 0);
      chunk += csvLine([m.id, m.batch_id, m.recipient, m.status, m.segments, m.encoding, m.error_code, m.error_message, iso(m.created_at), iso(m.send_at), iso(m.sent_at), iso(m.delivered_at), clicked, title, category, iso(m.held_until ?? null)]);
    }
    yield chunk;
    after = page[page.length - 1]!.id;
  }
}
