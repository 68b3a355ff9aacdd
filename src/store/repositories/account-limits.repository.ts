/**
 * The queries behind account limits: quotas (pending Sender IDs, stored documents), the daily
 * message cap and the destination allowlist (src/services/accounts/account-limits.ts).
 */
import { sql, type Transaction } from 'kysely';
import { dialectOf } from '../dialect.ts';
import type { Executor } from '../connect.ts';
import type { AccountsTable, Database } from '../database.ts';
import { preparedRead, preparedWrite } from '../prepared-statements.ts';

export const LIMIT_COLUMNS = [
  'id',
  'origin',
  'pending_sender_id_limit',
  'document_quota_bytes',
  'daily_message_limit',
  'daily_count',
  'daily_day',
  'allowed_countries',
] as const;
export type AccountLimitsRow = Pick<AccountsTable, (typeof LIMIT_COLUMNS)[number]>;

/** PostgreSQL numbers of type bigint may arrive as strings: every number comes out a number. */
function normalise(row: AccountLimitsRow): AccountLimitsRow {
  const n = (v: number | null) => (v === null ? null : Number(v));
  return {
    ...row,
    pending_sender_id_limit: n(row.pending_sender_id_limit),
    document_quota_bytes: n(row.document_quota_bytes),
    daily_message_limit: n(row.daily_message_limit),
    daily_count: Number(row.daily_count),
    daily_day: Number(row.daily_day),
  };
}

export async function accountLimitsRow(db: Executor, accountId: string): Promise<AccountLimitsRow | undefined> {
  const row = await db.selectFrom('accounts').select(LIMIT_COLUMNS).where('id', '=', accountId).executeTakeFirst();
  return row && normalise(row);
}

/**
 * Locks the account's row for the rest of the transaction and reads its limits: the first
 * statement of a transaction that checks a quota, so that concurrent ones for the same account
 * run one after the other and each counts what the one before it committed. On PostgreSQL a
 * row lock (taken before any insert, whose foreign keys would otherwise share-lock the row first
 * and deadlock with another transaction's lock); on SQLite a write to the row, which takes the
 * database's write lock at once rather than upgrading a read lock later.
 */
export async function lockAccountLimits(trx: Transaction<Database>, accountId: string): Promise<AccountLimitsRow | undefined> {
  const postgres = dialectOf(trx) === 'postgres';
  if (!postgres) await trx.updateTable('accounts').set({ origin: sql`origin` }).where('id', '=', accountId).execute();
  let q = trx.selectFrom('accounts').select(LIMIT_COLUMNS).where('id', '=', accountId);
  if (postgres) q = q.forUpdate();
  const row = await q.executeTakeFirst();
  return row && normalise(row);
}

export type LimitsPatch = Partial<Pick<AccountsTable, 'pending_sender_id_limit' | 'document_quota_bytes' | 'daily_message_limit' | 'allowed_countries'>>;

/** Returns whether the account exists. */
export async function updateAccountLimits(db: Executor, accountId: string, patch: LimitsPatch): Promise<boolean> {
  if (Object.keys(patch).length === 0) return (await accountLimitsRow(db, accountId)) !== undefined;
  const result = await db.updateTable('accounts').set(patch).where('id', '=', accountId).executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function countPendingSenderIds(db: Executor, accountId: string): Promise<number> {
  const row = await db
    .selectFrom('sender_ids')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId)
    .where('status', '=', 'pending')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function storedDocumentBytes(db: Executor, accountId: string): Promise<number> {
  const row = await db
    .selectFrom('sender_id_documents')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('size'), sql<number>`0`).as('bytes'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  return Number(row.bytes);
}

/** Messages counted on `day`: the stored count if it is about that day, else none yet. */
const countedToday = (day: number) => sql<number>`(case when daily_day = ${day} then daily_count else 0 end)`;

// Compiled once: a send's flush makes this UPDATE, and building it through Kysely each time cost
// more than SQLite spends running it.
const debitWithinDailyLimit = preparedWrite((db: Executor, accountId: string, credits: number, messages: number, day: number) =>
  db
    .updateTable('accounts')
    .set({
      credits: sql<number>`credits - ${credits}`,
      daily_count: sql<number>`${countedToday(day)} + ${messages}`,
      daily_day: day,
    })
    .where('id', '=', accountId)
    .where('credits', '>=', credits)
    .where((eb) => eb.or([eb('daily_message_limit', 'is', null), eb(sql<number>`${countedToday(day)} + ${messages}`, '<=', eb.ref('daily_message_limit'))]))
    .returning('credits'),
);

/**
 * Debits `credits` and counts `messages` against the account's daily cap in one UPDATE, if and
 * only if the balance covers the credits and the cap (when there is one) the messages; returns
 * the new balance or null. Both guards sit inside the statement, so concurrent sends can never
 * pass either on the same room, on either database, and an account without a cap pays nothing
 * more than the debit it makes anyway. `day` is the UTC day (days since 1970-01-01).
 */
export async function tryDebitWithinDailyLimit(trx: Transaction<Database>, accountId: string, credits: number, messages: number, day: number): Promise<number | null> {
  const row = (await debitWithinDailyLimit(trx, accountId, credits, messages, day)).rows[0] as { credits: number | string } | undefined;
  return row ? Number(row.credits) : null;
}

/** What a refused debit ran into: the balance, the cap and what was counted on `day`. */
export async function debitState(db: Executor, accountId: string, day: number): Promise<{ credits: number; dailyLimit: number | null; countedToday: number } | undefined> {
  const row = await db
    .selectFrom('accounts')
    .select(['credits', 'daily_message_limit', countedToday(day).as('counted')])
    .where('id', '=', accountId)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    credits: Number(row.credits),
    dailyLimit: row.daily_message_limit === null ? null : Number(row.daily_message_limit),
    countedToday: Number(row.counted),
  };
}

/** The account's own destination list (comma-separated calling codes), read on the hot path. */
export const allowedCountriesRow = preparedRead((db, accountId: string) => db.selectFrom('accounts').select('allowed_countries').where('id', '=', accountId));

/** The same inside a transaction (a send committing under a newer access revision). */
export async function allowedCountriesNow(db: Executor, accountId: string): Promise<string | null | undefined> {
  return (await db.selectFrom('accounts').select('allowed_countries').where('id', '=', accountId).executeTakeFirst())?.allowed_countries;
}
