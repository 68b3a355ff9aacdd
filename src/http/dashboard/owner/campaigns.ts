/**
 * Campaigns, /dashboard/campaigns: the composer (a name, a Sender ID, a CSV or XLSX file of
 * recipients with its phone numbers column and default country, a template filled per row, now or
 * at a local time), its live preview (the first rows with encoding and
 * segments, every invalid row with its line and reason, the rows to recipients who opted out, the
 * cost against the balance), and one campaign's page (counts by status, polled; failures by error code; deliveries per minute; the
 * per-message results as CSV; Cancel for what is still scheduled).
 *
 * The form's fields come before the file in the page, and so in the multipart body: the server
 * knows the column, the country and the other choices when the file's first row arrives.
 *
 * The composer posts the whole form twice, file included: to /campaigns/preview through htmx
 * whenever what the preview shows depends on changes (the Sender ID, the template, the file; not
 * the date or the zone), and to /campaigns to send (from app.js with the upload's progress, or as a
 * plain form without script: the same answers, a redirect to the campaign or the page again with
 * the reason). Nothing of the file is kept between the two; the
 * send reads it again, streamed. The form's random key makes a resent form (reload, double click)
 * find the campaign it already made.
 */
import type { Multipart, MultipartFile } from '@fastify/multipart';
import { acting } from '../../acting.ts';
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../../errors/catalogue.ts';
import { isTimeZone, localTimeToInstant } from '../../../domain/local-time.ts';
import { COUNTRIES, countryByCode } from '../../../domain/national-number.ts';
import { RECIPIENT_COLUMN_LABELS } from '../../../domain/recipient-column.ts';
import { OPT_OUT_LINE } from '../../../domain/message-template.ts';
import { RecipientColumnUnclear } from '../../../services/campaigns/campaign-file.ts';
import { campaignClickThrough, campaignClickTimeline, MAX_RECORDED_CLICKS, type ClickTimeline } from '../../../services/links/links.ts';
import { MESSAGE_STATUSES } from '../../../domain/message-status.ts';
import {
  CAMPAIGN_MAX_BYTES,
  CAMPAIGN_MAX_ROWS,
  campaignOfForm,
  campaignProgress,
  campaignResultsCsv,
  cancelCampaign,
  campaignRefundedOnCancel,
  campaignTitle,
  composerDefaults,
  getCampaign,
  listCampaigns,
  LISTED_INVALID_ROWS,
  MAX_CAMPAIGN_NAME_CHARACTERS,
  MAX_TEMPLATE_CHARACTERS,
  newCampaignFormKey,
  optedOutSkipped,
  readCampaign,
  saveOwnerTimeZone,
  sendCampaign,
  type Campaign,
  type CampaignDraft,
  type CampaignProgress,
} from '../../../services/campaigns/campaigns.ts';
import type { FileReadPurpose } from '../../../services/campaigns/file-reads.ts';
import { listSenderIds } from '../../../services/sender-ids/sender-ids.ts';
import { html, raw, type Html } from '../../html.ts';
import { alert, csrfField, statusBadge, table, when } from '../layout.ts';
import { barChart } from '../bar-chart.ts';
import { field, formParts, seeOther } from '../session-guard.ts';
import { state, type OwnerArea } from './owner-area.ts';

const MULTIPART_LIMITS = { fileSize: CAMPAIGN_MAX_BYTES + 1, files: 1, fields: 16, fieldSize: 4 * MAX_TEMPLATE_CHARACTERS + 64, parts: 18 };

/** Statuses that may still change: the campaign page keeps polling while any message has one. */
const UNFINISHED = ['scheduled', 'pending', 'sent'] as const;

const ZONES = (() => {
  const list = (Intl as unknown as { supportedValuesOf?: (k: string) => string[] }).supportedValuesOf?.('timeZone') ?? [];
  return list.includes('UTC') ? list : ['UTC', ...list];
})();

interface ComposerForm {
  values: Record<string, string>;
  draft: CampaignDraft | null;
}

/** Reads what is left of a multipart body, so that the reply can be sent after an early error. */
async function drain(parts: AsyncIterableIterator<Multipart>, current?: MultipartFile): Promise<void> {
  try {
    if (current) for await (const _ of current.file);
    for await (const part of parts) if (part.type === 'file') for await (const _ of part.file);
  } catch {
    // The body was cut short: nothing more to read.
  }
}

/**
 * A failure of the upload itself (the body cut short or malformed, a part over a limit), told apart
 * from a failure of the work done with it: only the first is the form's fault.
 */
class UploadError extends Error {
  constructor(readonly reason: unknown) {
    super('the upload could not be read');
  }
}

/** `source` with its own failures wrapped in `UploadError`. */
async function* upload<T>(source: AsyncIterable<T>): AsyncGenerator<T> {
  try {
    for await (const item of source) yield item;
  } catch (err) {
    throw new UploadError(err);
  }
}

/**
 * Reads the composer's multipart form: its fields (which come before the file in the form) and the
 * file, checked row by row as it arrives (a preview, or a send that keeps the valid rows). A form
 * or file that cannot be read is `invalid_request`; any other failure (the database's, say) is
 * thrown as it is, for the error handler to log and answer 500.
 */
async function readComposer(request: FastifyRequest, ctx: OwnerArea['ctx'], purpose: FileReadPurpose): Promise<ComposerForm> {
  const { account } = state(request);
  const parts = formParts(request);
  const values: Record<string, string> = {};
  let draft: CampaignDraft | null = null;
  let file: MultipartFile | undefined;
  try {
    for await (const part of upload(parts)) {
      if (part.type === 'field') {
        if (typeof part.value === 'string' && part.fieldname !== '_csrf') values[part.fieldname] = part.value;
        continue;
      }
      file = part;
      if (!part.filename) throw new AppError('invalid_request', 'Choose the file of recipients (CSV or XLSX).');
      if (/\.(xls|ods|numbers)$/i.test(part.filename)) {
        throw new AppError('invalid_request', 'This kind of spreadsheet is not read: save the sheet as “Excel Workbook (.xlsx)” or as “CSV UTF-8” and choose that file.');
      }
      const format = /\.xlsx$/i.test(part.filename) ? 'xlsx' : 'csv';
      // The composer's select says `marketing` unless changed; a form without it is transactional, as the API.
      const category = values.category === 'marketing' ? ('marketing' as const) : ('transactional' as const);
      const later = values.when === 'later' && values.send_at_local ? localTimeToInstant(values.send_at_local, values.time_zone ?? '') : null;
      const reading = {
        recipientColumn: values.recipient_column ?? null,
        country: values.country ?? null,
        everyRow: values.every_row === 'on',
        optOutLine: values.opt_out_line === 'on',
        category,
        trackLinks: values.track_links === 'on',
        ...(later?.ok ? { sendAt: later.at } : {}),
      };
      draft = await readCampaign(ctx, account.id, { sender: values.sender ?? '', template: values.template ?? '' }, upload(part.file), { purpose, format, fileName: part.filename, reading });
      file = undefined;
    }
  } catch (err) {
    await drain(parts, file);
    if (!(err instanceof UploadError)) throw err;
    const code = (err.reason as { code?: string }).code;
    if (code === 'FST_REQ_FILE_TOO_LARGE') throw new AppError('invalid_request', `The file is larger than ${CAMPAIGN_MAX_BYTES / 1024 / 1024} MiB; split it into several campaigns.`);
    throw new AppError('invalid_request', 'The form could not be read; please try again.');
  }
  if (!draft) throw new AppError('invalid_request', 'Choose the file of recipients (CSV or XLSX).');
  return { values, draft };
}

const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString('en')} ${n === 1 ? one : many}`;

const FOUND_BY_NAME = `Found by its name (${RECIPIENT_COLUMN_LABELS.slice(0, 5).join(', ')}…)`;

/**
 * The options of the phone numbers column select. Once a file is read: its columns, the one in use
 * selected; the first option, value "", lets the name decide (`found`: the column it found), or asks
 * the owner to choose when it could not. Before a file: the name decides, or the remembered column.
 */
function columnOptions(opts: { columns?: string[]; selected?: string | null; found?: string | null; unclear?: boolean }): Html {
  const first = opts.unclear ? 'Choose the column…' : opts.found ? `${opts.found} (found by its name)` : FOUND_BY_NAME;
  const columns = opts.columns ?? (opts.selected ? [opts.selected] : []);
  const selected = opts.found ? null : (opts.selected ?? null);
  const firstSelected = selected === null || !columns.includes(selected);
  return html`<option value=""${firstSelected ? raw(' selected') : ''}>${first}</option>${[...new Set(columns.filter((c) => c.trim() !== ''))].map(
    (c) => html`<option value="${c}"${c === selected ? raw(' selected') : ''}>${c.length > 60 ? `${c.slice(0, 60)}…` : c}</option>`,
  )}`;
}

function columnSelect(options: Html, oob = false): Html {
  return html`<select id="recipient-column" name="recipient_column" aria-describedby="column-hint"${oob ? raw(' hx-swap-oob="true"') : ''}>${options}</select>`;
}

/**
 * The select again, swapped in by htmx beside the preview: a new element, so that the browser
 * selects the option marked (options swapped into a live select keep their own selection). The
 * form listens for its changes on its parent, which stays.
 */
function columnOptionsUpdate(options: Html): Html {
  return columnSelect(options, true);
}

function draftColumnOptions(draft: CampaignDraft): Html {
  return draft.file.toColumnHow === 'found'
    ? columnOptions({ columns: draft.file.headers, found: draft.recipientColumn })
    : columnOptions({ columns: draft.file.headers, selected: draft.recipientColumn });
}

function unclearColumnOptions(err: RecipientColumnUnclear): Html {
  return columnOptions({ columns: err.columns, unclear: true });
}

/** What a refusal of the whole file says in the preview: for an unclear column, the question and where to answer it. */
function refusalFragment(err: AppError): Html {
  if (err instanceof RecipientColumnUnclear) {
    return html`${alert(`${err.message} Choose it in “Phone numbers column” above; the file is read again.`)}${columnOptionsUpdate(unclearColumnOptions(err))}`;
  }
  return alert(err.message);
}

/** What quiet hours do to a marketing campaign (DECISIONS.md §16): how many recipients wait, and until when. */
function heldNote(draft: CampaignDraft): Html | string {
  if (draft.category !== 'marketing') return html`<p id="held-note" data-held="0">Transactional: sent at once, whatever the time where the recipients are.</p>`;
  const { count, from, until } = draft.held;
  if (count === 0) return html`<p id="held-note" data-held="0">Marketing: every recipient is inside the account’s quiet-hours window at the time it goes; none is held.</p>`;
  const at = (ms: number) => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  const span = from !== null && until !== null && from !== until ? html`between ${at(from)} and ${at(until)}` : html`at ${at(until!)}`;
  return html`<p id="held-note" data-held="${count}" data-held-until="${new Date(until!).toISOString()}"><strong>${plural(count, 'recipient')}</strong> ${count === 1 ? 'is' : 'are'} outside the quiet-hours window in their time zone: ${count === 1 ? 'it is' : 'they are'} held (charged now) until it opens, ${span}, then sent over its first half hour. <a href="/dashboard/settings/quiet-hours">Quiet hours</a></p>`;
}

function previewFragment(draft: CampaignDraft): Html {
  const rows = draft.preview.map((r) => [
    r.line,
    r.written === r.to ? r.to : html`${r.to}<br><span class="muted">written ${r.written}</span>`,
    html`<span class="message-text">${r.text}</span>`,
    r.encoding,
    r.segments,
  ]);
  const country = countryByCode(draft.country);
  const over = draft.credits > draft.balance;
  const invalidRows = draft.invalid.map((r) => [r.line, r.to || html`<span class="muted">(empty)</span>`, r.reason]);
  const more = draft.invalidCount - draft.invalid.length;
  const optedOutRows = draft.optedOut.map((r) => [r.line, r.to, 'opted out']);
  const moreOptedOut = draft.optedOutCount - draft.optedOut.length;
  return html`<section id="campaign-preview" aria-labelledby="preview-title"><h2 id="preview-title">Preview</h2>
<p id="file-summary" data-file-rows="${draft.file.rows}">The file has ${plural(draft.file.rows, 'row')} (${
    draft.file.format === 'xlsx' ? 'XLSX, first sheet' : `${draft.file.encoding.toUpperCase()}, separated by ${draft.file.separator === '\t' ? 'tabs' : `“${draft.file.separator}”`}`
  }): <strong>${plural(draft.messages, 'message')}</strong> to send${
    draft.invalidCount > 0 ? html`, <strong>${plural(draft.invalidCount, 'row')}</strong> that cannot be sent (listed below, skipped)` : ''
  }${
    draft.optedOutCount > 0 ? html`, <strong>${plural(draft.optedOutCount, 'row')}</strong> to recipients who opted out (listed below, skipped, not charged)` : ''
  }.</p>
<p id="recipients-summary">Phone numbers from the column <strong>“${draft.recipientColumn}”</strong>${draft.file.toColumnHow === 'found' ? ' (found by its name)' : ''}; ${
    country ? html`numbers without “+” read as numbers of <strong>${country.name} (+${country.callingCode})</strong>` : 'no default country: every number needs its “+” and country code'
  }.</p>
${
  draft.duplicateCount > 0
    ? html`<p id="duplicates" data-duplicates="${draft.duplicateCount}"><strong>${plural(draft.duplicateCount, 'row')}</strong> ${draft.duplicateCount === 1 ? 'repeats a number' : 'repeat a number'} already in the file: ${
        draft.everyRow ? 'every row is sent, as asked.' : 'each number gets one message, the first row’s (not charged for the repeats).'
      }</p>`
    : ''
}${heldNote(draft)}${draft.optOutLine ? html`<p id="opt-out-line-note">Each message ends with “${OPT_OUT_LINE}”, counted in its segments and the cost.</p>` : ''}${
  draft.trackLinks ? html`<p id="track-links-note">Each link becomes a short link of its own for each recipient, as in the messages below, counted in the segments and the cost; the campaign’s page shows the clicks.</p>` : ''
}
${table(`The first ${plural(draft.preview.length, 'message')}`, ['Line', 'To', 'Message', 'Encoding', 'Segments'], rows, 'No row of the file can be sent.')}
<p id="campaign-cost">Cost: <strong data-credits="${draft.credits}">${plural(draft.credits, 'credit')}</strong>; the balance is <strong data-balance="${draft.balance}">${plural(draft.balance, 'credit')}</strong>.</p>
${over ? alert(`The balance does not cover this campaign: it needs ${plural(draft.credits - draft.balance, 'more credit')}. Ask the operator for a top-up, or send fewer messages.`) : ''}
${
  draft.invalidCount > 0
    ? html`<div id="invalid-rows">${table(`Rows that cannot be sent (${draft.invalidCount.toLocaleString('en')})`, ['Line', 'To', 'Reason'], invalidRows, '')}${
        more > 0 ? html`<p class="hint">…and ${plural(more, 'more row')}; the first ${LISTED_INVALID_ROWS} are listed. Fix the file and choose it again to check them.</p>` : ''
      }</div>`
    : ''
}${
  draft.optedOutCount > 0
    ? html`<div id="opted-out-rows">${table(`Recipients who opted out (${draft.optedOutCount.toLocaleString('en')}): skipped`, ['Line', 'To', 'Status'], optedOutRows, '')}${
        moreOptedOut > 0 ? html`<p class="hint">…and ${plural(moreOptedOut, 'more row')}; the first ${LISTED_INVALID_ROWS} are listed.</p>` : ''
      }<p class="hint">They replied STOP or were added to the opt-out list: nothing is sent to them, and they are not in the cost.</p></div>`
    : ''
}</section>${columnOptionsUpdate(draftColumnOptions(draft))}`;
}

function progressFragment(campaign: Campaign, progress: CampaignProgress, polling: boolean): Html {
  const counts = MESSAGE_STATUSES.filter((s) => (progress.counts[s] ?? 0) > 0).map((s) => [statusBadge(s), html`<span data-status-count="${s}">${(progress.counts[s] ?? 0).toLocaleString('en')}</span>`]);
  const failures = progress.failures.map((f) => [html`<code>${f.code}</code>`, f.count.toLocaleString('en')]);
  const deliveries = progress.deliveries.slice(-60).map((d) => [when(d.at), d.count.toLocaleString('en')]);
  return html`<div id="campaign-progress"${
    polling ? raw(` hx-get="/dashboard/campaigns/${encodeURIComponent(campaign.id)}/progress" hx-trigger="every 2s" hx-swap="outerHTML"`) : ''
  } aria-live="polite">
${table('Messages by status', ['Status', 'Messages'], counts, 'No messages.')}
${table('Failures by error code', ['Error code', 'Messages'], failures, 'No failures.')}
${deliveries.length > 0 ? table('Delivered per minute (last 60 minutes with deliveries)', ['Minute', 'Delivered'], deliveries, '') : ''}
<script type="application/json" id="chart-data">${raw(
    // Numbers only; `<` is escaped all the same so that no text could close the element.
    JSON.stringify(chartData(progress)).replace(/</g, '\\u003c'),
  )}</script></div>`;
}

/** Deliveries per minute for the chart, with a zero minute before and after so that even one minute draws a line. */
function chartData(progress: CampaignProgress): { x: string; days: number[]; counts: { delivered: number[] } } {
  const points = progress.deliveries;
  if (points.length === 0) return { x: 'Minute', days: [], counts: { delivered: [] } };
  const all = [{ at: points[0]!.at - 60_000, count: 0 }, ...points, { at: points[points.length - 1]!.at + 60_000, count: 0 }];
  return { x: 'Minute', days: all.map((p) => p.at), counts: { delivered: all.map((p) => p.count) } };
}

const DAY_MS = 86_400_000;
const utcDay = (ms: number) => new Date(ms).toLocaleDateString('en-GB', { timeZone: 'UTC', day: 'numeric', month: 'short' });
const utcHour = (ms: number) => `${new Date(ms).toISOString().slice(11, 13)}:00`;

/**
 * The campaign's clicks over time: an SVG bar per UTC hour (or day), and the same figures as a
 * table of the hours (days) with clicks, which is also what a screen reader reads.
 */
function clickChart(timeline: ClickTimeline, clicks: number): Html {
  const daily = timeline.bucketMs === DAY_MS;
  const per = daily ? 'day' : 'hour';
  const title = `Clicks per ${per} (UTC)`;
  if (timeline.charted === 0) return html`<section id="click-chart" aria-labelledby="click-chart-heading"><h2 id="click-chart-heading">${title}</h2><p class="muted">No clicks yet.</p></section>`;
  const { buckets } = timeline;
  const top = buckets.reduce((a, b) => (b.clicks > a.clicks ? b : a));
  const name = (at: number) => (daily ? new Date(at).toISOString().slice(0, 10) : `${new Date(at).toISOString().slice(0, 13).replace('T', ' ')}:00`);
  const description = `${plural(timeline.charted, 'click')} from ${name(buckets[0]!.at)} to ${name(buckets[buckets.length - 1]!.at)} UTC; the most, ${top.clicks.toLocaleString('en')}, ${daily ? 'on' : 'in the hour from'} ${name(top.at)}.`;
  const bars = buckets.map((b) => ({ label: daily ? utcDay(b.at) : b.at % DAY_MS === 0 || b === buckets[0] ? `${utcDay(b.at)} ${utcHour(b.at)}` : utcHour(b.at), value: b.clicks }));
  const rows = buckets
    .filter((b) => b.clicks > 0)
    .map((b) => [html`<time datetime="${new Date(b.at).toISOString()}">${name(b.at)}${daily ? '' : ' UTC'}</time>`, html`<span data-bucket-clicks="${new Date(b.at).toISOString()}">${b.clicks.toLocaleString('en')}</span>`]);
  return html`<section id="click-chart" aria-labelledby="click-chart-heading" data-bucket="${per}"><h2 id="click-chart-heading">${title}</h2>
${barChart({ id: 'click-chart-title', title, description, bars, unit: ['click', 'clicks'] })}
${table(`${title}, ${per}s with clicks`, [daily ? 'Day (UTC)' : 'Hour (UTC)', 'Clicks'], rows, '')}${
    timeline.charted < clicks
      ? html`<p class="hint">The chart has the ${plural(timeline.charted, 'click')} whose time is kept (a link’s first ${MAX_RECORDED_CLICKS} fetches) of the ${plural(clicks, 'click')} counted.</p>`
      : ''
  }</section>`;
}

function stillRunning(progress: CampaignProgress): boolean {
  return UNFINISHED.some((s) => (progress.counts[s] ?? 0) > 0);
}

export function campaignPages(app: FastifyInstance, { ctx, render }: OwnerArea): void {
  const composer = async (
    request: FastifyRequest,
    reply: FastifyReply,
    opts: { error?: string; values?: Record<string, string>; draft?: CampaignDraft | null; unclear?: RecipientColumnUnclear } = {},
  ) => {
    const { account, session, owner } = state(request);
    const senders = (await listSenderIds(ctx, { accountId: account.id, status: 'approved' })).map((s) => s.name);
    const v = opts.values ?? {};
    const defaults = await composerDefaults(ctx, account.id);
    // A form sent back keeps what was chosen in it; a new one starts from the account's defaults.
    const posted = opts.values !== undefined && Object.keys(opts.values).length > 0;
    const country = posted ? (countryByCode(v.country)?.code ?? '') : (defaults.country ?? '');
    const guessCountry = !posted && defaults.countryFrom === null;
    const columns = opts.unclear
      ? unclearColumnOptions(opts.unclear)
      : opts.draft
        ? draftColumnOptions(opts.draft)
        : columnOptions({ selected: posted ? v.recipient_column : defaults.recipientColumn });
    const zone = v.time_zone && isTimeZone(v.time_zone) ? v.time_zone : (owner.time_zone ?? null);
    const later = v.when === 'later';
    return render(
      request,
      reply,
      'New campaign',
      'campaigns',
      html`${alert(opts.error)}
${senders.length === 0 ? alert('A campaign needs an approved Sender ID: register one under Sender IDs first.') : ''}
<form method="post" action="/dashboard/campaigns" enctype="multipart/form-data" id="composer" data-upload-send
 hx-post="/dashboard/campaigns/preview" hx-encoding="multipart/form-data" hx-trigger="change from:#sender, change from:#category, change from:#send-at, change from:#column-field, change from:#country, change from:#every-row, change from:#opt-out-line, change from:#track-links, change from:#file, input from:#template delay:600ms" hx-target="#preview" hx-sync="this:replace">${csrfField(session.csrf_token)}
<input type="hidden" name="form_key" value="${newCampaignFormKey()}">
<label for="campaign-name">Campaign name</label>
<input id="campaign-name" name="name" type="text" maxlength="${MAX_CAMPAIGN_NAME_CHARACTERS}" value="${v.name ?? ''}" placeholder="The file’s name and today’s date" aria-describedby="name-hint">
<p class="hint" id="name-hint">Shown in your list of campaigns and in the results file. Left empty, the file’s name and the date.</p>
<label for="sender">Sender ID</label><select id="sender" name="sender" required>${senders.map((s) => html`<option value="${s}"${s === v.sender ? raw(' selected') : ''}>${s}</option>`)}</select>
<label for="template">Message template</label>
<textarea id="template" name="template" rows="4" required maxlength="${MAX_TEMPLATE_CHARACTERS}" aria-describedby="template-hint">${v.template ?? ''}</textarea>
<p class="hint" id="template-hint">Write <code>{{first_name}}</code> where a column of the file goes (any column, by its header; case does not matter, and a space is written <code>_</code>: a column “First Name” is <code>{{first_name}}</code>). Each row gets its own text, checked as the API checks a message.</p>
<label class="check"><input type="checkbox" id="opt-out-line" name="opt_out_line"${v.opt_out_line === 'on' ? raw(' checked') : ''}> Add “${OPT_OUT_LINE}” on a line of its own at the end of each message</label>
<label for="category">Category</label><select id="category" name="category" aria-describedby="category-hint">${(['marketing', 'transactional'] as const).map(
        (c) => html`<option value="${c}"${c === (v.category === 'transactional' ? 'transactional' : 'marketing') ? raw(' selected') : ''}>${c === 'marketing' ? 'Marketing' : 'Transactional'}</option>`,
      )}</select>
<p class="hint" id="category-hint">Marketing messages reach each phone only inside your <a href="/dashboard/settings/quiet-hours">quiet hours</a> in its own time zone (08:00-20:00 unless you change them); the others wait for the window to open. Transactional (receipts, reminders, alerts the recipient expects) go at once.</p>
<label class="check"><input type="checkbox" id="track-links" name="track_links"${v.track_links === 'on' ? raw(' checked') : ''}> Track links: each link becomes a short link per recipient, and its clicks are counted</label>
<fieldset><legend>When</legend>
<div><label><input type="radio" name="when" value="now"${later ? '' : raw(' checked')}> Send now</label>
<label><input type="radio" name="when" value="later"${later ? raw(' checked') : ''}> At a date and time</label></div>
<div><label for="send-at">Date and time</label><input id="send-at" name="send_at_local" type="datetime-local" value="${v.send_at_local ?? ''}" aria-describedby="send-at-hint"></div>
<div><label for="time-zone">Time zone</label><select id="time-zone" name="time_zone" data-save-url="/dashboard/campaigns/time-zone"${zone ? '' : raw(' data-browser-zone')}>${ZONES.map(
        (z) => html`<option value="${z}"${z === (zone ?? 'UTC') ? raw(' selected') : ''}>${z}</option>`,
      )}</select></div>
<p class="hint" id="send-at-hint">Up to 35 days ahead. A time that a daylight-saving change skips or repeats is refused. The zone is remembered for your next campaign.</p></fieldset>
<fieldset><legend>Recipients</legend>
<div><label for="country">Country of numbers without “+”</label><select id="country" name="country" aria-describedby="country-hint"${guessCountry ? raw(' data-browser-country') : ''}>
<option value="">None: every number has its “+” and country code</option>${COUNTRIES.map((c) => html`<option value="${c.code}"${c.code === country ? raw(' selected') : ''}>${c.name} (+${c.callingCode})</option>`)}</select></div>
<p class="hint" id="country-hint">Numbers written as at home, such as 07400 123401 or (415) 555-2671, are read as numbers of this country; numbers with a “+” are read as they are. Remembered for your next campaign.</p>
<div id="column-field"><label for="recipient-column">Phone numbers column</label>${columnSelect(columns)}</div>
<p class="hint" id="column-hint">Found by its name (to, phone, phone number, mobile, cell, msisdn, number, recipient; any case and spacing). When the file has none or several, choose it here.</p>
<label><input type="checkbox" id="every-row" name="every_row"${v.every_row === 'on' ? raw(' checked') : ''}> Send every row, even when a number repeats (by default each number gets one message, the first row’s)</label>
<div><label for="file">Recipients (CSV or XLSX file)</label>
<input id="file" name="file" type="file" required accept=".csv,.xlsx,text/csv,text/plain,application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" aria-describedby="file-hint"></div>
<p class="hint" id="file-hint">A first line naming the columns: one of phone numbers, any others for the template. CSV: separated by commas, semicolons or tabs; UTF-8 or UTF-16. XLSX: the first sheet. Up to ${CAMPAIGN_MAX_ROWS.toLocaleString('en')} rows and ${CAMPAIGN_MAX_BYTES / 1024 / 1024} MiB.</p></fieldset>
<progress id="upload-progress" max="100" value="0" hidden aria-label="Upload progress" aria-describedby="send-status"></progress>
<div id="preview" aria-live="polite">${opts.draft ? previewFragment(opts.draft) : ''}</div>
<div class="actions"><button type="submit" id="send-campaign">Send campaign</button> <span id="send-status" role="status" aria-live="polite"></span></div></form>`,
    );
  };

  app.get('/campaigns/new', async (request, reply) => composer(request, reply));

  // The zone the owner picks in the composer (posted by app.js as soon as it changes) is the
  // composer's default from then on; a scheduled send stores its zone too, script or not.
  app.post('/campaigns/time-zone', async (request, reply) => {
    await saveOwnerTimeZone(ctx, state(request).owner.id, field(request.body, 'time_zone'));
    return reply.code(204).send();
  });

  app.post('/campaigns/preview', { config: { multipartLimits: MULTIPART_LIMITS } }, async (request, reply) => {
    reply.type('text/html; charset=utf-8');
    try {
      const { draft } = await readComposer(request, ctx, 'preview');
      return previewFragment(draft!).text;
    } catch (err) {
      if (!(err instanceof AppError) || (err.status >= 500 && err.code !== 'service_unavailable')) throw err;
      if (err.headers) reply.headers(err.headers);
      // htmx swaps only successful answers: the reason (a server too busy to check the file
      // included) is the preview.
      return refusalFragment(err).text;
    }
  });

  app.post('/campaigns', { config: { multipartLimits: MULTIPART_LIMITS } }, async (request, reply) => {
    const { account, owner } = state(request);
    let form: ComposerForm | null = null;
    try {
      form = await readComposer(request, ctx, 'send');
      const v = form.values;
      const made = await campaignOfForm(ctx, account.id, v.form_key ?? '');
      if (made) return seeOther(reply, `/dashboard/campaigns/${made.id}`);
      const later = v.when === 'later';
      if (later && !v.send_at_local) throw new AppError('invalid_send_at', 'Choose the date and time to send at, or “Send now”.');
      const { campaign } = await sendCampaign(acting(ctx, request), form.draft!, {
        account,
        ownerId: owner.id,
        formKey: v.form_key ?? '',
        name: v.name ?? '',
        ...(later ? { sendAtLocal: v.send_at_local!, timeZone: v.time_zone ?? '' } : {}),
      });
      return seeOther(reply, `/dashboard/campaigns/${campaign.id}`);
    } catch (err) {
      if (!(err instanceof AppError) || (err.status >= 500 && err.code !== 'service_unavailable')) throw err;
      if (err.headers) reply.headers(err.headers);
      reply.code(err.status);
      return composer(request, reply, {
        error: /nothing was sent/i.test(err.message) ? err.message : `${err.message} Nothing was sent.`,
        values: form?.values ?? {},
        draft: form?.draft ?? null,
        ...(err instanceof RecipientColumnUnclear ? { unclear: err } : {}),
      });
    }
  });

  app.get('/campaigns', async (request, reply) => {
    const { account } = state(request);
    const campaigns = await listCampaigns(ctx, account.id);
    const rows = campaigns.map((c) => [
      html`<a href="/dashboard/campaigns/${c.id}">${c.name !== null ? html`<span class="campaign-name">${c.name}</span> ` : ''}<code>${c.id}</code></a>`,
      c.sender,
      c.messages.toLocaleString('en'),
      optedOutSkipped(c).toLocaleString('en'),
      c.credits.toLocaleString('en'),
      c.send_at !== null ? when(c.send_at) : html`<span class="muted">at once</span>`,
      when(c.created_at),
    ]);
    return render(
      request,
      reply,
      'Campaigns',
      'campaigns',
      html`<p><a class="button" href="/dashboard/campaigns/new">New campaign</a></p>
${table('Your campaigns (latest 100)', ['Campaign', 'From', 'Messages', 'Skipped (opted out)', 'Credits debited', 'Send at', 'Created'], rows, 'No campaigns yet.')}`,
    );
  });

  const campaignPage = async (request: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply, notice?: { text: string; kind: 'ok' | 'error' }) => {
    const { account, session } = state(request);
    const campaign = await getCampaign(ctx, account.id, request.params.id);
    const progress = await campaignProgress(ctx, account.id, campaign.id);
    const scheduled = progress.counts.scheduled ?? 0;
    const refunded = await campaignRefundedOnCancel(ctx, account.id, campaign.id, progress);
    const clicks = Number(campaign.track_links ?? 0) === 1 ? await campaignClickThrough(ctx, account.id, campaign.id, progress.counts.delivered ?? 0) : null;
    const timeline = clicks ? await campaignClickTimeline(ctx, account.id, campaign, ctx.clock()) : null;
    const localSendAt =
      campaign.send_at !== null && campaign.time_zone
        ? html` (${new Intl.DateTimeFormat('en-GB', { timeZone: campaign.time_zone, dateStyle: 'medium', timeStyle: 'short' }).format(new Date(Number(campaign.send_at)))} ${campaign.time_zone})`
        : '';
    return render(
      request,
      reply,
      `Campaign ${campaignTitle(campaign)}`,
      'campaigns',
      html`${alert(notice?.text, notice?.kind)}<section><dl class="detail">
${campaign.name !== null ? html`<dt>Campaign ID</dt><dd><code>${campaign.id}</code></dd>` : ''}
<dt>From</dt><dd>${campaign.sender}</dd>
<dt>Category</dt><dd id="campaign-category">${campaign.category === 'marketing' ? 'Marketing (held outside quiet hours)' : 'Transactional'}</dd>
<dt>Template</dt><dd><span class="message-text">${campaign.template}</span>${Number(campaign.opt_out_line) === 1 ? html`<br><span class="muted">with “${OPT_OUT_LINE}” added on its own line</span>` : ''}</dd>
<dt>File</dt><dd>${plural(Number(campaign.file_rows), 'row')}: ${plural(Number(campaign.messages), 'message')}${
        Number(campaign.invalid_rows) > 0 ? html`, ${plural(Number(campaign.invalid_rows), 'invalid row')} not sent` : ''
      }${Number(campaign.duplicate_rows) > 0 ? html`, <span id="duplicates-skipped">${plural(Number(campaign.duplicate_rows), 'row')} repeating a number skipped</span>` : ''}${optedOutSkipped(campaign) > 0 ? html`, <span id="opted-out-skipped">${plural(optedOutSkipped(campaign), 'row')} to recipients who opted out skipped</span>` : ''}</dd>
<dt>Credits</dt><dd id="campaign-credits">${Number(campaign.credits).toLocaleString('en')} debited${refunded > 0 ? html`, ${refunded.toLocaleString('en')} refunded for canceled messages` : ''}</dd>
${
  clicks
    ? html`<dt>Clicks</dt><dd id="campaign-clicks" data-clicks="${clicks.clicks}" data-clicked="${clicks.clicked}">${plural(clicks.clicks, 'click')}; ${plural(clicks.clicked, 'recipient')} clicked: <span id="click-through">${
        clicks.rate === null ? 'no click-through rate before a message is delivered' : `${(clicks.rate * 100).toFixed(1)}% of the ${(progress.counts.delivered ?? 0).toLocaleString('en')} delivered`
      }</span></dd>`
    : ''
}<dt>Send at</dt><dd>${campaign.send_at !== null ? html`${when(campaign.send_at)}${localSendAt}` : 'at once'}</dd>
<dt>Created</dt><dd>${when(campaign.created_at)}</dd></dl></section>
${progressFragment(campaign, progress, stillRunning(progress))}
<div id="chart" aria-label="Delivered per minute" role="img"></div>
${timeline && clicks ? clickChart(timeline, clicks.clicks) : ''}
<p><a href="/dashboard/campaigns/${campaign.id}/results.csv" download>Download the results (CSV)</a> · <a href="/dashboard/campaigns">All campaigns</a></p>
${
  scheduled > 0
    ? html`<form method="post" action="/dashboard/campaigns/${campaign.id}/cancel" data-confirm="Cancel the ${scheduled} scheduled messages of this campaign? Their credits are refunded.">${csrfField(session.csrf_token)}<button type="submit" class="danger" id="cancel-campaign">Cancel the scheduled messages</button></form>`
    : ''
}`,
      ['uPlot.iife.min.js', 'uPlot.min.css'],
    );
  };

  app.get<{ Params: { id: string } }>('/campaigns/:id', async (request, reply) => campaignPage(request, reply));

  app.get<{ Params: { id: string } }>('/campaigns/:id/progress', async (request, reply) => {
    const { account } = state(request);
    const campaign = await getCampaign(ctx, account.id, request.params.id);
    const progress = await campaignProgress(ctx, account.id, campaign.id);
    const polling = stillRunning(progress);
    // 286 tells htmx to stop polling: nothing of the campaign can change any more.
    return reply.code(polling ? 200 : 286).type('text/html; charset=utf-8').send(progressFragment(campaign, progress, polling).text);
  });

  app.get<{ Params: { id: string } }>('/campaigns/:id/results.csv', async (request, reply) => {
    const { account } = state(request);
    const campaign = await getCampaign(ctx, account.id, request.params.id);
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="${campaign.id}-results.csv"`)
      .send(Readable.from(campaignResultsCsv(ctx, account.id, campaign.id)));
  });

  app.post<{ Params: { id: string } }>('/campaigns/:id/cancel', async (request, reply) => {
    try {
      const { canceled, credits } = await cancelCampaign(acting(ctx, request), state(request).account.id, request.params.id);
      return campaignPage(request, reply, { text: `${plural(canceled, 'scheduled message')} canceled; ${plural(credits, 'credit')} refunded.`, kind: 'ok' });
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'not_cancelable') throw err;
      reply.code(err.status);
      return campaignPage(request, reply, { text: err.message, kind: 'error' });
    }
  });
}
