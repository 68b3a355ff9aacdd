/**
 * Tracked links (migration 034): the rows written with their messages, the one row the redirect
 * reads, the click counters, and the lists of `GET /v1/sms/links` and a campaign's results.
 */
import { sql } from 'kysely';
import type { Executor, Store } from '../connect.ts';
import { preparedRead } from '../prepared-statements.ts';
import type { LinkClicksTable, LinksTable } from '../database.ts';
import { insertRows } from '../insert-rows.ts';
import { chunked } from '../chunk.ts';

/** Inserts the links; one whose code is already taken is left out, not an error. */
export async function insertLinksSkippingTaken(db: Executor, rows: readonly LinksTable[]): Promise<void> {
  await insertRows(db, 'links', rows, { skipExisting: true });
}

/** How many links each message or batch (the key) has stored. */
export async function storedLinkCounts(db: Executor, keys: { batchIds: string[]; messageIds: string[] }): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const part of chunked(keys.batchIds, 1)) {
    const rows = await db.selectFrom('links').select(['batch_id', (eb) => eb.fn.countAll<number | string>().as('n')]).where('batch_id', 'in', part).groupBy('batch_id').execute();
    for (const r of rows) counts.set(r.batch_id!, Number(r.n));
  }
  for (const part of chunked(keys.messageIds, 1)) {
    const rows = await db.selectFrom('links').select(['message_id', (eb) => eb.fn.countAll<number | string>().as('n')]).where('message_id', 'in', part).groupBy('message_id').execute();
    for (const r of rows) counts.set(r.message_id, Number(r.n));
  }
  return counts;
}

/** Which of `codes` are stored for a message other than the one named with it. */
export async function codesTakenByOthers(db: Executor, links: readonly Pick<LinksTable, 'code' | 'message_id'>[]): Promise<Set<string>> {
  const mine = new Map(links.map((l) => [l.code, l.message_id]));
  const taken = new Set<string>();
  for (const part of chunked(links, 1)) {
    const rows = await db.selectFrom('links').select(['code', 'message_id']).where('code', 'in', part.map((l) => l.code)).execute();
    for (const r of rows) if (mine.get(r.code) !== r.message_id) taken.add(r.code);
  }
  return taken;
}

/**
 * The link of that code: the one row the redirect reads, by its primary key, as a prepared
 * statement on the read connection (on SQLite it never queues behind the writer's transactions).
 */
export const linkByCode: (store: Store, code: string) => Promise<Pick<LinksTable, 'code' | 'url' | 'created_at' | 'message_id'> | undefined> = preparedRead((db, code: string) =>
  db.selectFrom('links').select(['code', 'url', 'created_at', 'message_id']).where('code', '=', code),
);

/** A click to count: on which link, whether a bot's (or a HEAD) fetch, and when. */
export interface ClickToCount {
  code: string;
  bot: boolean;
  at: number;
}

/**
 * Counts clicks (and bots' fetches) on their links in one statement, however many there are and
 * however they share links: per link the clicks are added at once, and the link's first counted
 * click's time set if it had none. Returns, per click in the order given, whether it was its
 * link's first counted click and how many fetches the link had with it, or null when the link is
 * gone. One statement, not one per click: at a thousand clicks a second each statement's round
 * trip on PostgreSQL, and the objects its driver makes, were the redirect's tail.
 */
export async function countClicks(db: Executor, clicks: readonly ClickToCount[]): Promise<({ first: boolean; total: number } | null)[]> {
  const perLink = new Map<string, { persons: number; bots: number; firstAt: number | null }>();
  for (const c of clicks) {
    const l = perLink.get(c.code) ?? { persons: 0, bots: 0, firstAt: null };
    if (c.bot) l.bots++;
    else {
      l.persons++;
      l.firstAt ??= c.at;
    }
    perLink.set(c.code, l);
  }
  if (perLink.size === 0) return [];
  // VALUES columns are column1..column4 on both databases; the casts type PostgreSQL's parameters.
  const values = sql.join([...perLink].map(([code, l]) => sql`(cast(${code} as text), cast(${l.persons} as integer), cast(${l.bots} as integer), cast(${l.firstAt} as bigint))`));
  const result = await sql<{ code: string; clicks: number | string; bot_clicks: number | string }>`
    update links set clicks = clicks + v.column2, bot_clicks = bot_clicks + v.column3, first_clicked_at = coalesce(first_clicked_at, v.column4)
    from (values ${values}) as v
    where links.code = v.column1
    returning links.code, links.clicks, links.bot_clicks`.execute(db);
  // Walk the clicks in order from each link's counts before them.
  const before = new Map<string, { persons: number; total: number }>();
  for (const r of result.rows) {
    const l = perLink.get(r.code)!;
    before.set(r.code, { persons: Number(r.clicks) - l.persons, total: Number(r.clicks) + Number(r.bot_clicks) - l.persons - l.bots });
  }
  return clicks.map((c) => {
    const b = before.get(c.code);
    if (!b) return null;
    b.total++;
    if (c.bot) return { first: false, total: b.total };
    b.persons++;
    return { first: b.persons === 1, total: b.total };
  });
}

export async function insertClicks(db: Executor, rows: readonly LinkClicksTable[]): Promise<void> {
  if (rows.length > 0) await insertRows(db, 'link_clicks', rows);
}

/** The links of a message or a batch of the account, grouped by message. */
export async function linksPage(db: Executor, accountId: string, filter: { messageId?: string; batchId?: string }, limit: number, offset: number): Promise<{ rows: LinksTable[]; total: number }> {
  let q = db.selectFrom('links').where('account_id', '=', accountId);
  if (filter.messageId !== undefined) q = q.where('message_id', '=', filter.messageId);
  if (filter.batchId !== undefined) q = q.where('batch_id', '=', filter.batchId);
  const [rows, total] = await Promise.all([
    q.selectAll().orderBy('message_id').orderBy('created_at').orderBy('code').limit(limit).offset(offset).execute(),
    q.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(total.n) };
}

/** Per message (of those given that have links): its links' counted clicks. */
export async function clicksOfMessages(db: Executor, messageIds: readonly string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const part of chunked(messageIds, 1)) {
    const rows = await db
      .selectFrom('links')
      .select(['message_id', (eb) => eb.fn.sum<number | string>('clicks').as('clicks')])
      .where('message_id', 'in', part)
      .groupBy('message_id')
      .execute();
    for (const r of rows) out.set(r.message_id, Number(r.clicks));
  }
  return out;
}

/** A campaign's counted clicks, and how many of its messages (so recipients) had at least one. */
export async function campaignClicks(db: Executor, accountId: string, campaignId: string): Promise<{ clicks: number; clickedMessages: number }> {
  const row = await db
    .selectFrom('links')
    .select([(eb) => eb.fn.sum<number | string | null>('clicks').as('clicks'), (eb) => eb.fn.count<number | string>('message_id').distinct().as('clicked')])
    .where('account_id', '=', accountId)
    .where('batch_id', 'in', db.selectFrom('batches').select('id').where('campaign_id', '=', campaignId).where('account_id', '=', accountId))
    .where('clicks', '>', 0)
    .executeTakeFirstOrThrow();
  return { clicks: Number(row.clicks ?? 0), clickedMessages: Number(row.clicked) };
}

/** The width of a bucket of `campaignClicksByTime`: a literal in the SQL, so only these two. */
export type ClickBucketMs = 3_600_000 | 86_400_000;

/**
 * A campaign's counted clicks (not bots, not HEAD) per bucket of `bucketMs` since the epoch (UTC
 * hours or days), from `from` on, grouped in the database: one row per bucket that had a click.
 * Read from the clicks whose time is kept (a link's first MAX_RECORDED_CLICKS fetches), so it can
 * add up to less than `campaignClicks` for a link fetched more often than that.
 */
export async function campaignClicksByTime(db: Executor, accountId: string, campaignId: string, bucketMs: ClickBucketMs, from: number): Promise<{ bucket: number; clicks: number }[]> {
  // A literal, not a parameter: better-sqlite3 binds a JS number as a REAL, and the division must
  // be an integer one on both databases (both truncate, and every time here is positive).
  const bucket = sql<number | string>`link_clicks.clicked_at / ${sql.lit(bucketMs === 86_400_000 ? 86_400_000 : 3_600_000)}`;
  const rows = await db
    .selectFrom('link_clicks')
    .innerJoin('links', 'links.code', 'link_clicks.code')
    .select([bucket.as('bucket'), (eb) => eb.fn.countAll<number | string>().as('clicks')])
    .where('links.account_id', '=', accountId)
    .where('links.batch_id', 'in', db.selectFrom('batches').select('id').where('campaign_id', '=', campaignId).where('account_id', '=', accountId))
    .where('link_clicks.bot', '=', 0)
    .where('link_clicks.clicked_at', '>=', from)
    .groupBy(bucket)
    .orderBy(bucket)
    .execute();
  return rows.map((r) => ({ bucket: Number(r.bucket), clicks: Number(r.clicks) }));
}

/** What a link's click event needs of its message and account; undefined when the message is gone. */
export async function clickEventTarget(db: Executor, messageId: string) {
  return db
    .selectFrom('messages')
    .innerJoin('accounts', 'accounts.id', 'messages.account_id')
    .select(['messages.id', 'messages.account_id', 'messages.batch_id', 'messages.recipient', 'messages.callback_url', 'messages.callback_format', 'accounts.events_url'])
    .where('messages.id', '=', messageId)
    .executeTakeFirst();
}

/** Deletes the links of these messages (at most a chunk's worth of ids) and their clicks: retention's purge and redaction. */
export async function deleteLinksOfMessages(db: Executor, messageIds: readonly string[]): Promise<void> {
  await db.deleteFrom('link_clicks').where('code', 'in', db.selectFrom('links').select('code').where('message_id', 'in', messageIds)).execute();
  await db.deleteFrom('links').where('message_id', 'in', messageIds).execute();
}
