/**
 * Rows of `accounts`. Credits move only through the ledger repository (`tryDebit`,
 * `creditCredits`), which writes the balance and its ledger row together.
 */
import { sql, type SqlBool } from 'kysely';
import { chunked } from '../chunk.ts';
import type { Executor } from '../connect.ts';
import type { AccountsTable, AccountStatus } from '../database.ts';

export async function insertAccount(db: Executor, account: AccountsTable): Promise<void> {
  await db.insertInto('accounts').values(account).execute();
}

/** Removes an account that nothing refers to yet (a sign-up that lost a race for its address). */
/** The account whose e-mail address is `email` in any case, if there is one. */
export async function accountIdByEmail(db: Executor, email: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('accounts')
    .select('id')
    .where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase()))
    .executeTakeFirst();
  return row?.id;
}

export async function deleteAccount(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('accounts').where('id', '=', id).execute();
}

export async function findAccount(db: Executor, id: string): Promise<AccountsTable | undefined> {
  return db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The events URL of each of the accounts that has one. */
export async function eventsUrlsOf(db: Executor, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('accounts').select(['id', 'events_url']).where('id', 'in', ids).where('events_url', 'is not', null).execute();
  return new Map(rows.map((r) => [r.id, r.events_url!]));
}

export interface AccountFilter {
  /** Exact address, compared without case. */
  email?: string;
  /** Part of the address or the name (without case), or a whole id. */
  search?: string;
}

/** Accounts newest first. */
export async function listAccounts(db: Executor, filter: AccountFilter = {}): Promise<AccountsTable[]> {
  let q = db.selectFrom('accounts').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc');
  if (filter.email) q = q.where((eb) => eb(eb.fn('lower', ['email']), '=', filter.email!.toLowerCase()));
  if (filter.search) {
    const like = `%${filter.search.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    // ESCAPE names the backslash: PostgreSQL assumes it, SQLite has no escape character without it.
    q = q.where((eb) =>
      eb.or([sql<SqlBool>`lower(email) like ${like} escape '\\'`, sql<SqlBool>`lower(name) like ${like} escape '\\'`, eb('id', '=', filter.search!)]),
    );
  }
  return q.execute();
}

/** Sets the status; false when there is no such account. */
export async function setAccountStatus(db: Executor, id: string, status: AccountStatus): Promise<boolean> {
  const result = await db.updateTable('accounts').set({ status }).where('id', '=', id).executeTakeFirst();
  return result.numUpdatedRows !== 0n;
}

/** The status of each of these accounts (the dispatch re-check). */
export async function accountStatuses(db: Executor, ids: readonly string[]): Promise<Map<string, AccountStatus>> {
  const out = new Map<string, AccountStatus>();
  for (const part of chunked(ids, 1)) {
    for (const r of await db.selectFrom('accounts').select(['id', 'status']).where('id', 'in', part).execute()) out.set(r.id, r.status);
  }
  return out;
}

/** Sets or clears (null) the account's events URL; false when there is no such account. */
export async function setAccountEventsUrl(db: Executor, id: string, url: string | null): Promise<boolean> {
  const result = await db.updateTable('accounts').set({ events_url: url }).where('id', '=', id).executeTakeFirst();
  return result.numUpdatedRows !== 0n;
}

/** Sets the account's quiet-hours window in minutes (null, null: the default); false when there is no such account. */
export async function setAccountQuietHours(db: Executor, id: string, start: number | null, end: number | null): Promise<boolean> {
  const result = await db.updateTable('accounts').set({ quiet_hours_start: start, quiet_hours_end: end }).where('id', '=', id).executeTakeFirst();
  return result.numUpdatedRows !== 0n;
}

/** The account's quiet-hours window as stored (both null: the default); undefined for no such account. */
export async function findAccountQuietHours(db: Executor, id: string): Promise<{ quiet_hours_start: number | null; quiet_hours_end: number | null } | undefined> {
  const row = await db.selectFrom('accounts').select(['quiet_hours_start', 'quiet_hours_end']).where('id', '=', id).executeTakeFirst();
  return row && { quiet_hours_start: row.quiet_hours_start ?? null, quiet_hours_end: row.quiet_hours_end ?? null };
}

/** Sets or clears (null: the default) the account's reply to HELP; false when there is no such account. */
export async function setAccountHelpText(db: Executor, id: string, text: string | null): Promise<boolean> {
  const result = await db.updateTable('accounts').set({ help_text: text }).where('id', '=', id).executeTakeFirst();
  return result.numUpdatedRows !== 0n;
}

/** Installs a new signing secret and keeps the one it replaces (signing beside it for a while). */
export async function replaceWebhookSecret(db: Executor, id: string, secret: string, previous: string, now: number): Promise<void> {
  await db
    .updateTable('accounts')
    .set({ webhook_secret: secret, webhook_secret_previous: previous, webhook_secret_rotated_at: now })
    .where('id', '=', id)
    .execute();
}

/** The account's contact address, when the account exists. */
export async function findAccountEmail(db: Executor, id: string): Promise<string | undefined> {
  const row = await db.selectFrom('accounts').select('email').where('id', '=', id).executeTakeFirst();
  return row?.email;
}

/** The account's messages still waiting for dispatch. */
export async function countPendingMessages(db: Executor, accountId: string): Promise<number> {
  const row = await db
    .selectFrom('messages')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId)
    .where('status', '=', 'pending')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** What Basic auth with an Account SID needs of its account. */
export type TwilioCredentialsRow = Pick<AccountsTable, 'id' | 'status' | 'twilio_sid' | 'twilio_token' | 'twilio_token_previous' | 'twilio_token_rotated_at'>;

const TWILIO_COLUMNS = ['id', 'status', 'twilio_sid', 'twilio_token', 'twilio_token_previous', 'twilio_token_rotated_at'] as const;

export async function accountByTwilioSid(db: Executor, sid: string): Promise<TwilioCredentialsRow | undefined> {
  return db.selectFrom('accounts').select(TWILIO_COLUMNS).where('twilio_sid', '=', sid).executeTakeFirst();
}

export async function twilioCredentialsOf(db: Executor, id: string): Promise<TwilioCredentialsRow | undefined> {
  return db.selectFrom('accounts').select(TWILIO_COLUMNS).where('id', '=', id).executeTakeFirst();
}

/** Gives the account its first SID and token; false when it already had them (another request won). */
export async function setFirstTwilioCredentials(db: Executor, id: string, sid: string, token: string): Promise<boolean> {
  const result = await db.updateTable('accounts').set({ twilio_sid: sid, twilio_token: token }).where('id', '=', id).where('twilio_sid', 'is', null).executeTakeFirst();
  return result.numUpdatedRows !== 0n;
}

/** Installs a new Auth Token and keeps the one it replaces (accepted beside it for a while). */
export async function replaceTwilioToken(db: Executor, id: string, token: string, previous: string, now: number): Promise<void> {
  await db.updateTable('accounts').set({ twilio_token: token, twilio_token_previous: previous, twilio_token_rotated_at: now }).where('id', '=', id).execute();
}
