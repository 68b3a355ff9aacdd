/**
 * Phone numbers assigned to accounts (src/services/numbers/numbers.ts). A send names one as
 * `from`: that lookup is prepared, and read in the sending transaction when access moved.
 */
import type { Executor, Store } from '../connect.ts';
import type { NumbersTable } from '../database.ts';
import { preparedRead } from '../prepared-statements.ts';
import { chunked } from '../chunk.ts';

export type NumberRow = NumbersTable;

/** Inserts the assignment; a number already held by an account is a unique violation. */
export async function insertNumber(db: Executor, row: NumberRow): Promise<void> {
  await db.insertInto('numbers').values(row).execute();
}

/** Removes the assignment; the row removed, or undefined when nobody held the number. */
export async function deleteNumber(db: Executor, number: string): Promise<NumberRow | undefined> {
  return db.deleteFrom('numbers').where('number', '=', number).returningAll().executeTakeFirst();
}

export async function numberRow(db: Executor, number: string): Promise<NumberRow | undefined> {
  return db.selectFrom('numbers').selectAll().where('number', '=', number).executeTakeFirst();
}

/** Newest first (ties by number, descending); `accountId` narrows to one account. */
export async function listNumberRows(db: Executor, filter: { accountId?: string } = {}): Promise<NumberRow[]> {
  let q = db.selectFrom('numbers').selectAll().orderBy('created_at', 'desc').orderBy('number', 'desc');
  if (filter.accountId) q = q.where('account_id', '=', filter.accountId);
  return q.execute();
}

const ownedQuery = (db: Executor, accountId: string, number: string) =>
  db.selectFrom('numbers').select('number').where('number', '=', number).where('account_id', '=', accountId);

/** The number if this account holds it, on the read connection (prepared). */
export const ownedNumber: (store: Store, accountId: string, number: string) => Promise<{ number: string } | undefined> = preparedRead(ownedQuery);

/** The same, read in the caller's transaction. */
export function ownedNumberInTransaction(db: Executor, accountId: string, number: string): Promise<{ number: string } | undefined> {
  return ownedQuery(db, accountId, number).executeTakeFirst();
}

/** Which of `numbers` (canonical spelling) the account holds: one query per 30,000, whatever the count. */
export async function numbersHeldAmong(db: Executor, accountId: string, numbers: readonly string[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (const part of chunked([...new Set(numbers)], 1)) {
    for (const r of await db.selectFrom('numbers').select('number').where('account_id', '=', accountId).where('number', 'in', part).execute()) out.add(r.number);
  }
  return out;
}

/** Who holds a number, with what an inbound message to it needs of the account. */
export interface NumberHolderRow {
  number: string;
  account_id: string;
  name: string;
  status: string;
  events_url: string | null;
  help_text: string | null;
  sms_url?: string | null;
  twilio_sid?: string | null;
}

/** The account holding `number` (read in the caller's transaction when given one), or undefined. */
export async function numberHolder(db: Executor, number: string): Promise<NumberHolderRow | undefined> {
  return db
    .selectFrom('numbers')
    .innerJoin('accounts', 'accounts.id', 'numbers.account_id')
    .select(['numbers.number', 'numbers.account_id', 'accounts.name', 'accounts.status', 'accounts.events_url', 'accounts.help_text', 'numbers.sms_url', 'accounts.twilio_sid'])
    .where('numbers.number', '=', number)
    .executeTakeFirst();
}

/** Sets where messages to the account's number are POSTed Twilio-style; false when the account does not hold it. */
export async function setNumberSmsUrl(db: Executor, accountId: string, number: string, url: string | null): Promise<boolean> {
  const result = await db.updateTable('numbers').set({ sms_url: url }).where('number', '=', number).where('account_id', '=', accountId).executeTakeFirst();
  return result.numUpdatedRows !== 0n;
}
