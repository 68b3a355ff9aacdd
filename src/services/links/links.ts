/**
 * Tracked links (DECISIONS.md §16): rewriting a message's URLs into short links at acceptance, the
 * links' rows written in the acceptance's transaction (a taken code is drawn again), the public
 * redirect with its click counting and `sms.link_clicked` event, and `GET /v1/sms/links`.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppError } from '../../errors/catalogue.ts';
import { isBotFetch, LINK_CODE_PATTERN, linkCode, MAX_TRACKED_LINKS, rewriteLinks, type RewrittenText } from '../../domain/tracked-links.ts';
import type { LinkClicksTable, LinksTable, MessagesTable } from '../../store/database.ts';
import type { Executor } from '../../store/connect.ts';
import {
  campaignClicks,
  campaignClicksByTime,
  type ClickBucketMs,
  clickEventTarget,
  clicksOfMessages,
  codesTakenByOthers,
  countClicks,
  insertClicks,
  insertLinksSkippingTaken,
  linkByCode,
  linksPage,
  storedLinkCounts,
} from '../../store/repositories/links.repository.ts';
import { iso } from '../../util/ids.ts';
import { queueWebhookEvent } from '../webhooks/account-events.ts';
import type { Context } from '../context.ts';

const DAY_MS = 86_400_000;

/** Click rows (time, user agent) kept per link; past them only the counters move. */
export const MAX_RECORDED_CLICKS = 100;

/** The longest user agent kept with a click or sent in the event. */
const MAX_USER_AGENT = 512;

/** Clicks waiting to be recorded after their redirect was answered; past it, more are not recorded. */
const MAX_PENDING_RECORDS = 1000;

/** The message text with its URLs as short links, or an `invalid_message` refusal. */
export function trackedText(ctx: Context, text: string): { ok: true; rewritten: RewrittenText } | { ok: false; code: 'invalid_message'; message: string } {
  const rewritten = rewriteLinks(text, ctx.config.links.baseUrl, () => linkCode(randomBytes));
  if (rewritten) return { ok: true, rewritten };
  return { ok: false, code: 'invalid_message', message: `\`message\` has more than ${MAX_TRACKED_LINKS} links; \`track_links\` tracks at most ${MAX_TRACKED_LINKS} per message.` };
}

/** `trackedText` for a single send, refusing with an error. */
export function trackedTextOrThrow(ctx: Context, text: string): RewrittenText {
  const t = trackedText(ctx, text);
  if (!t.ok) throw new AppError(t.code, t.message);
  return t.rewritten;
}

/** The rows of a message's links. */
export function linkRows(message: MessagesTable, links: readonly { code: string; url: string }[], now: number): LinksTable[] {
  return links.map((l) => ({
    code: l.code,
    message_id: message.id,
    batch_id: message.batch_id,
    account_id: message.account_id,
    url: l.url,
    created_at: now,
    clicks: 0,
    bot_clicks: 0,
    first_clicked_at: null,
  }));
}

/**
 * Writes the links in the acceptance's transaction, before their messages: a code another link
 * already has (a 1 in 10^14 chance per link, but possible) is drawn again and replaced in its
 * message's text, which keeps its length, so its segments and price. One query to write, one per
 * batch or single message to check, more only after a collision.
 */
export async function writeLinks(trx: Executor, baseUrl: string, links: LinksTable[], messages: readonly MessagesTable[]): Promise<void> {
  let pending = links;
  for (let round = 0; pending.length > 0; round++) {
    if (round > 5) throw new Error('could not draw free link codes');
    await insertLinksSkippingTaken(trx, pending);
    const expected = new Map<string, number>();
    for (const l of pending) {
      const key = l.batch_id ?? l.message_id;
      expected.set(key, (expected.get(key) ?? 0) + 1);
    }
    const batchIds = [...new Set(pending.flatMap((l) => (l.batch_id ? [l.batch_id] : [])))];
    const messageIds = [...new Set(pending.flatMap((l) => (l.batch_id ? [] : [l.message_id])))];
    const stored = await storedLinkCounts(trx, { batchIds, messageIds });
    // A first round expects all of a key's links stored; a later one, all of the links written so far.
    const short = round === 0 ? pending.filter((l) => stored.get(l.batch_id ?? l.message_id) !== expected.get(l.batch_id ?? l.message_id)) : pending;
    if (short.length === 0) return;
    const taken = await codesTakenByOthers(trx, short);
    const byId = new Map(messages.map((m) => [m.id, m]));
    const redrawn: LinksTable[] = [];
    for (const l of short) {
      if (!taken.has(l.code)) continue;
      const code = linkCode(randomBytes);
      const message = byId.get(l.message_id);
      if (message) message.body = message.body.replace(`${baseUrl}/${l.code}`, `${baseUrl}/${code}`);
      // In place: a transaction run again (a conflict on PostgreSQL) writes the link and text as they are now.
      l.code = code;
      redrawn.push(l);
    }
    pending = redrawn;
  }
}

export type LinkOutcome = { found: true; location: string } | { found: false; location: string | null };

/** A click waiting to be recorded. */
interface Click {
  link: Pick<LinksTable, 'code' | 'url' | 'message_id'>;
  bot: boolean;
  userAgent: string | null;
  at: number;
}

/**
 * How long a click waits for others before they are recorded together. Written as soon as they
 * came, a thousand clicks a second were some three hundred transactions of three or four clicks
 * each (a round trip apiece for BEGIN, the counts and COMMIT, and a commit's flush on PostgreSQL):
 * 0.4 ms of the database server's CPU a click, more than the redirect's own read. Waiting this
 * long makes them a few dozen transactions; a click's count and event come this much later.
 */
const CLICK_LINGER_MS = 25;

/**
 * Records clicks after their redirects were answered: they gather for CLICK_LINGER_MS, and what
 * arrives while a transaction is being written waits for the next (one commit for many clicks,
 * one writer at a time, as SQLite needs). Bounded: past MAX_PENDING_RECORDS waiting, a click is
 * not recorded.
 */
class ClickRecorder {
  #queue: Click[] = [];
  #running = false;

  constructor(private readonly ctx: Context) {}

  add(click: Click): void {
    if (this.#queue.length >= MAX_PENDING_RECORDS) {
      this.ctx.log.warn({ code: click.link.code }, 'too many link clicks waiting to be recorded: this one is not');
      return;
    }
    this.#queue.push(click);
    if (!this.#running) void this.#run();
  }

  async #run(): Promise<void> {
    this.#running = true;
    try {
      while (this.#queue.length > 0) {
        await sleep(CLICK_LINGER_MS);
        const clicks = this.#queue.splice(0, this.#queue.length);
        try {
          const queued = await this.ctx.store.db.transaction().execute((trx) => recordClicks(trx, clicks));
          if (queued > 0) this.ctx.wake('webhook');
        } catch (error) {
          this.ctx.log.error({ err: error, clicks: clicks.length }, 'recording link clicks failed');
        }
      }
    } finally {
      this.#running = false;
    }
  }
}

const recorders = new WeakMap<object, ClickRecorder>();

function clickRecorder(ctx: Context): ClickRecorder {
  let r = recorders.get(ctx.store);
  if (!r) {
    r = new ClickRecorder(ctx);
    recorders.set(ctx.store, r);
  }
  return r;
}

/**
 * `GET|HEAD /l/<code>`: where the link goes, read from its one row. An unknown code, or a link
 * older than LINK_TTL_DAYS, goes to LINK_FALLBACK_URL, or nowhere (the caller answers 404). The
 * click is recorded after the answer, without holding it up: counted for a person, flagged for
 * HEAD and previews, crawlers and scanners (`isBotFetch`).
 */
export async function followLink(ctx: Context, code: string, method: string, userAgent: string | undefined): Promise<LinkOutcome> {
  const fallback = { found: false as const, location: ctx.config.links.fallbackUrl };
  if (!LINK_CODE_PATTERN.test(code)) return fallback;
  const link = await linkByCode(ctx.store, code);
  const now = ctx.clock();
  if (!link || now - Number(link.created_at) > ctx.config.links.ttlDays * DAY_MS) return fallback;
  clickRecorder(ctx).add({ link, bot: isBotFetch(method, userAgent), userAgent: userAgent === undefined ? null : userAgent.slice(0, MAX_USER_AGENT), at: now });
  return { found: true, location: link.url };
}

/**
 * Counts the clicks (one statement, whatever their number), keeps the time of each link's first
 * MAX_RECORDED_CLICKS fetches, and queues `sms.link_clicked` for a link's first counted click.
 * Returns how many events it queued.
 */
async function recordClicks(trx: Executor, clicks: readonly Click[]): Promise<number> {
  const counted = await countClicks(trx, clicks.map((c) => ({ code: c.link.code, bot: c.bot, at: c.at })));
  const kept: LinkClicksTable[] = [];
  const firsts: Click[] = [];
  clicks.forEach((c, i) => {
    const n = counted[i];
    if (!n) return;
    if (n.total <= MAX_RECORDED_CLICKS) kept.push({ code: c.link.code, clicked_at: c.at, user_agent: c.userAgent, bot: c.bot ? 1 : 0 });
    if (n.first) firsts.push(c);
  });
  await insertClicks(trx, kept);
  let events = 0;
  for (const c of firsts) if (await queueClickEvent(trx, c.link, c.userAgent, c.at)) events++;
  return events;
}

/**
 * `sms.link_clicked` with exactly §16's fields, to the message's callback URL (a JSON one: a
 * Twilio-style status callback gets Twilio's statuses only) or else the account's events URL;
 * delivered, signed and retried by the webhook worker like every event.
 */
async function queueClickEvent(trx: Executor, link: Pick<LinksTable, 'url' | 'message_id'>, userAgent: string | null, now: number): Promise<boolean> {
  const m = await clickEventTarget(trx, link.message_id);
  if (!m) return false;
  const url = m.callback_url && m.callback_format !== 'twilio' ? m.callback_url : m.events_url;
  if (!url) return false;
  const payload = {
    event: 'sms.link_clicked',
    message_id: m.id,
    batch_id: m.batch_id,
    to: m.recipient,
    url: link.url,
    clicked_at: iso(now),
    user_agent: userAgent,
    timestamp: iso(now),
  };
  await queueWebhookEvent(trx, { accountId: m.account_id, messageId: m.id, batchId: m.batch_id, inboundId: null, event: 'sms.link_clicked', url, body: payload }, now);
  return true;
}

export interface LinkView {
  message_id: string;
  url: string;
  short_url: string;
  clicks: number;
  first_clicked_at: string | null;
}

/** `GET /v1/sms/links?message_id=|batch_id=`: the links of one message or one batch, paged. */
export async function listLinks(
  ctx: Context,
  accountId: string,
  query: { message_id?: string; batch_id?: string; page?: number; limit?: number },
): Promise<{ status: 'success'; data: LinkView[]; pagination: { page: number; limit: number; total: number } }> {
  if ((query.message_id === undefined) === (query.batch_id === undefined)) {
    throw new AppError('invalid_request', 'Give exactly one of `message_id` and `batch_id`.', {
      details: [{ field: query.message_id === undefined ? 'message_id' : 'batch_id', code: 'invalid_request', message: 'exactly one of message_id and batch_id' }],
    });
  }
  const page = query.page ?? 1;
  const limit = query.limit ?? 50;
  const filter = query.message_id !== undefined ? { messageId: query.message_id } : { batchId: query.batch_id! };
  const { rows, total } = await linksPage(ctx.store.db, accountId, filter, limit, (page - 1) * limit);
  return {
    status: 'success',
    data: rows.map((r) => ({
      message_id: r.message_id,
      url: r.url,
      short_url: `${ctx.config.links.baseUrl}/${r.code}`,
      clicks: Number(r.clicks),
      first_clicked_at: iso(r.first_clicked_at === null ? null : Number(r.first_clicked_at)),
    })),
    pagination: { page, limit, total },
  };
}

/** A campaign's clicks and click-through rate: recipients who clicked over those delivered (null before any is). */
export async function campaignClickThrough(ctx: Context, accountId: string, campaignId: string, delivered: number): Promise<{ clicks: number; clicked: number; rate: number | null }> {
  const { clicks, clickedMessages } = await campaignClicks(ctx.store.db, accountId, campaignId);
  return { clicks, clicked: clickedMessages, rate: delivered > 0 ? clickedMessages / delivered : null };
}

const HOUR_MS = 3_600_000;

/** Up to this long since the campaign went out, its chart counts clicks per hour; past it, per day. */
const HOURLY_CHART_MS = 48 * HOUR_MS;

/** A campaign's counted clicks over time: every bucket from the first to the last, empty ones included. */
export interface ClickTimeline {
  /** UTC hours or UTC days. */
  bucketMs: ClickBucketMs;
  /** Each bucket's start and its clicks, in order, without gaps. */
  buckets: { at: number; clicks: number }[];
  /** The clicks in the buckets (less than the campaign's clicks when a link had more fetches than are kept with their time). */
  charted: number;
}

/**
 * The clicks of a campaign per UTC hour since it went out (its `send_at`, or its creation), or
 * per UTC day once more than 48 hours have passed; up to now, or to the day its links expire
 * (LINK_TTL_DAYS after their creation, with the campaign), when no click counts any more. Null
 * before it goes out. At most 49 hourly or LINK_TTL_DAYS + 1 daily buckets, whatever its size.
 */
export async function campaignClickTimeline(
  ctx: Context,
  accountId: string,
  campaign: { id: string; created_at: number | string; send_at: number | string | null },
  now: number,
): Promise<ClickTimeline | null> {
  const created = Number(campaign.created_at);
  const start = campaign.send_at === null ? created : Number(campaign.send_at);
  if (now < start) return null;
  const end = Math.min(now, created + ctx.config.links.ttlDays * DAY_MS);
  const bucketMs: ClickBucketMs = end - start <= HOURLY_CHART_MS ? HOUR_MS : DAY_MS;
  // From the links' creation: a link followed before the campaign's send time (the owner trying it
  // from the messages' page) is still in the chart, which then starts there.
  const rows = await campaignClicksByTime(ctx.store.db, accountId, campaign.id, bucketMs, created);
  let first = Math.floor(start / bucketMs);
  let last = Math.floor(end / bucketMs);
  for (const r of rows) {
    first = Math.min(first, r.bucket);
    last = Math.max(last, r.bucket);
  }
  const counts = new Map(rows.map((r) => [r.bucket, r.clicks]));
  const buckets: ClickTimeline['buckets'] = [];
  for (let b = first; b <= last; b++) buckets.push({ at: b * bucketMs, clicks: counts.get(b) ?? 0 });
  return { bucketMs, buckets, charted: rows.reduce((sum, r) => sum + r.clicks, 0) };
}

/** Counted clicks per message of those given (absent: no tracked link). */
export async function messageClicks(ctx: Context, messageIds: readonly string[]): Promise<Map<string, number>> {
  return clicksOfMessages(ctx.store.db, messageIds);
}
