/**
 * Campaigns of the dashboard's composer: the campaign rows, their batches' messages counted by
 * status and by error code, delivered over time, and the per-message results a page at a time.
 * A campaign's messages are those of the batches that name it (`batches.campaign_id`).
 */
import { sql } from 'kysely';
import type { Executor } from '../connect.ts';
import type { CampaignDefaultsTable, CampaignsTable, MessagesTable } from '../database.ts';
import type { MessageStatus } from '../../domain/message-status.ts';

export type CampaignRow = CampaignsTable;

export async function insertCampaign(db: Executor, row: CampaignsTable): Promise<void> {
  await db.insertInto('campaigns').values(row).execute();
}

export async function campaignByFormKey(db: Executor, accountId: string, formKey: string): Promise<CampaignRow | undefined> {
  return db.selectFrom('campaigns').selectAll().where('account_id', '=', accountId).where('form_key', '=', formKey).executeTakeFirst();
}

export async function campaignById(db: Executor, accountId: string, id: string): Promise<CampaignRow | undefined> {
  return db.selectFrom('campaigns').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
}

/** The account's campaigns, newest first. */
export async function listCampaignRows(db: Executor, accountId: string, limit: number): Promise<CampaignRow[]> {
  return db.selectFrom('campaigns').selectAll().where('account_id', '=', accountId).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
}

export async function campaignBatchIds(db: Executor, accountId: string, campaignId: string): Promise<string[]> {
  const rows = await db.selectFrom('batches').select('id').where('campaign_id', '=', campaignId).where('account_id', '=', accountId).orderBy('id').execute();
  return rows.map((r) => r.id);
}

function campaignMessages(db: Executor, accountId: string, campaignId: string) {
  return db
    .selectFrom('messages')
    .where('account_id', '=', accountId)
    .where('batch_id', 'in', db.selectFrom('batches').select('id').where('campaign_id', '=', campaignId).where('account_id', '=', accountId));
}

/** How many of the campaign's messages are in each status (statuses with none are absent). */
export async function campaignStatusCounts(db: Executor, accountId: string, campaignId: string): Promise<Partial<Record<MessageStatus, number>>> {
  const rows = await campaignMessages(db, accountId, campaignId)
    .select(['status', (eb) => eb.fn.countAll<number | string>().as('n')])
    .groupBy('status')
    .execute();
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}

/** The credits of the campaign's canceled messages: refunded when they were canceled. */
export async function campaignCanceledCredits(db: Executor, accountId: string, campaignId: string): Promise<number> {
  const row = await campaignMessages(db, accountId, campaignId)
    .where('status', '=', 'canceled')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number | string>(eb.fn.coalesce('credits', 'segments')), eb.lit(0)).as('credits'))
    .executeTakeFirst();
  return Number(row?.credits ?? 0);
}

/** The campaign's failed and expired messages grouped by error code, most frequent first. */
export async function campaignFailures(db: Executor, accountId: string, campaignId: string): Promise<{ code: string; count: number }[]> {
  const rows = await campaignMessages(db, accountId, campaignId)
    .where('error_code', 'is not', null)
    .select(['error_code', (eb) => eb.fn.countAll<number | string>().as('n')])
    .groupBy('error_code')
    .execute();
  return rows.map((r) => ({ code: r.error_code!, count: Number(r.n) })).sort((a, b) => b.count - a.count || a.code.localeCompare(b.code));
}

/**
 * Deliveries per `bucketMs` interval: the start of each interval that had any (ms since the
 * epoch) and its count, in order. Integer division truncates on both dialects.
 */
export async function campaignDeliveries(db: Executor, accountId: string, campaignId: string, bucketMs: number): Promise<{ at: number; count: number }[]> {
  // A literal, not a parameter: better-sqlite3 binds a number as a REAL, which would not truncate.
  const bucket = sql.lit(Math.max(1, Math.trunc(bucketMs)));
  const rows = await campaignMessages(db, accountId, campaignId)
    .where('delivered_at', 'is not', null)
    .select([(eb) => eb(eb.ref('delivered_at'), '/', bucket).as('bucket'), (eb) => eb.fn.countAll<number | string>().as('n')])
    .groupBy('bucket')
    .orderBy('bucket')
    .execute();
  return rows.map((r) => ({ at: Math.floor(Number(r.bucket)) * bucketMs, count: Number(r.n) }));
}

export type CampaignResultRow = Pick<MessagesTable, 'id' | 'batch_id' | 'recipient' | 'status' | 'segments' | 'encoding' | 'error_code' | 'error_message' | 'created_at' | 'sent_at' | 'delivered_at' | 'send_at' | 'held_until'>;

/** Up to `limit` of the campaign's messages after `afterId`, in id order (a keyset page). */
export async function campaignResultsPage(db: Executor, accountId: string, campaignId: string, afterId: string | null, limit: number): Promise<CampaignResultRow[]> {
  let q = campaignMessages(db, accountId, campaignId).select([
    'id',
    'batch_id',
    'recipient',
    'status',
    'segments',
    'encoding',
    'error_code',
    'error_message',
    'created_at',
    'sent_at',
    'delivered_at',
    'held_until',
    'send_at',
  ]);
  if (afterId !== null) q = q.where('id', '>', afterId);
  return q.orderBy('id').limit(limit).execute();
}

export async function setOwnerTimeZone(db: Executor, ownerId: string, timeZone: string): Promise<void> {
  await db.updateTable('owners').set({ time_zone: timeZone }).where('id', '=', ownerId).execute();
}

export type CampaignDefaults = Pick<CampaignDefaultsTable, 'country' | 'recipient_column'>;

export async function campaignDefaults(db: Executor, accountId: string): Promise<CampaignDefaults | undefined> {
  return db.selectFrom('campaign_defaults').select(['country', 'recipient_column']).where('account_id', '=', accountId).executeTakeFirst();
}

/**
 * Remembers the composer's country and, when given, recipient column for the account's next file
 * (a column left out keeps the one remembered).
 */
export async function saveCampaignDefaults(db: Executor, accountId: string, defaults: Pick<CampaignDefaults, 'country'> & Partial<CampaignDefaults>, now: number): Promise<void> {
  await db
    .insertInto('campaign_defaults')
    .values({ account_id: accountId, recipient_column: null, ...defaults, updated_at: now })
    .onConflict((oc) => oc.column('account_id').doUpdateSet({ ...defaults, updated_at: now }))
    .execute();
}
