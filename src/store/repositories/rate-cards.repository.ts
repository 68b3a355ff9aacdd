/**
 * Rate cards and their dated entries (migration 022), each account's card, and the revision
 * counter that every change moves in its own transaction, so that processes keeping cards in
 * memory (src/services/pricing/price-cache.ts) know when to read them again.
 */
import { sql } from 'kysely';
import type { Executor } from '../connect.ts';
import type { RateCardEntriesTable } from '../database.ts';
import { insertRows } from '../insert-rows.ts';

export const DEFAULT_CARD = 'default';

export async function readRateCardRevision(db: Executor): Promise<number> {
  const row = await db.selectFrom('rate_card_revision').select('value').where('id', '=', 1).executeTakeFirst();
  return Number(row?.value ?? 0);
}

async function bumpRevision(trx: Executor): Promise<void> {
  await trx.updateTable('rate_card_revision').set((eb) => ({ value: eb('value', '+', 1) })).where('id', '=', 1).execute();
}

export interface CardSummary {
  name: string;
  created_at: number;
  updated_at: number;
  /** Rows stored, dated changes and removals included. */
  entries: number;
  /** Accounts using the card (for `default`, those with no card of their own too). */
  accounts: number;
}

export async function listRateCards(db: Executor): Promise<CardSummary[]> {
  const cards = await db.selectFrom('rate_cards').select(['name', 'created_at', 'updated_at']).orderBy('name').execute();
  const entries = await db.selectFrom('rate_card_entries').select(['card', (eb) => eb.fn.countAll<number>().as('n')]).groupBy('card').execute();
  const accounts = (await db.selectFrom('accounts').select(['rate_card', (eb) => eb.fn.countAll<number>().as('n')]).groupBy('rate_card').execute()).map((r) => ({
    card: r.rate_card ?? DEFAULT_CARD,
    n: r.n,
  }));
  const count = (rows: { card?: string | null; n: number | string }[], name: string) => rows.filter((r) => r.card === name).reduce((sum, r) => sum + Number(r.n), 0);
  return cards.map((c) => ({
    name: c.name,
    created_at: Number(c.created_at),
    updated_at: Number(c.updated_at),
    entries: count(entries, c.name),
    accounts: count(accounts, c.name),
  }));
}

export async function rateCardExists(db: Executor, name: string): Promise<boolean> {
  return (await db.selectFrom('rate_cards').select('name').where('name', '=', name).executeTakeFirst()) !== undefined;
}

/** Every stored entry of a card, dated changes included. */
export async function rateCardEntries(db: Executor, card: string): Promise<RateCardEntriesTable[]> {
  const rows = await db.selectFrom('rate_card_entries').selectAll().where('card', '=', card).execute();
  return rows.map((r) => ({ ...r, effective_from: Number(r.effective_from), credits_per_segment: r.credits_per_segment === null ? null : Number(r.credits_per_segment) }));
}

/** The card an account uses; undefined when there is no such account. */
export async function accountRateCard(db: Executor, accountId: string): Promise<string | undefined> {
  const row = await db.selectFrom('accounts').select('rate_card').where('id', '=', accountId).executeTakeFirst();
  return row ? (row.rate_card ?? DEFAULT_CARD) : undefined;
}

/** Whether the account exists (and so was changed). */
export async function setAccountRateCard(trx: Executor, accountId: string, card: string): Promise<boolean> {
  const result = await trx
    .updateTable('accounts')
    .set({ rate_card: card === DEFAULT_CARD ? null : card })
    .where('id', '=', accountId)
    .executeTakeFirst();
  await bumpRevision(trx);
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Writes a card's new entries, all dated `at` (creating the card if new): an entry of the same
 * prefix and date is replaced. Entries a newer one in effect at `now` has superseded are dropped,
 * then removals in effect, which then stand alone for their prefix: the card reads the same.
 */
export async function writeRateCardEntries(trx: Executor, card: string, entries: RateCardEntriesTable[], at: number, now: number): Promise<void> {
  await trx
    .insertInto('rate_cards')
    .values({ name: card, created_at: now, updated_at: now })
    .onConflict((oc) => oc.column('name').doUpdateSet({ updated_at: now }))
    .execute();
  const prefixes = entries.map((e) => e.prefix);
  for (let i = 0; i < prefixes.length; i += 5000) {
    await trx.deleteFrom('rate_card_entries').where('card', '=', card).where('effective_from', '=', at).where('prefix', 'in', prefixes.slice(i, i + 5000)).execute();
  }
  await insertRows(trx, 'rate_card_entries', entries);
  await sql`delete from rate_card_entries
    where card = ${card}
      and effective_from < (select max(x.effective_from) from rate_card_entries x
                            where x.card = rate_card_entries.card and x.prefix = rate_card_entries.prefix and x.effective_from <= ${now})`.execute(trx);
  await trx.deleteFrom('rate_card_entries').where('card', '=', card).where('kind', '=', 'removed').where('effective_from', '<=', now).execute();
  await bumpRevision(trx);
}
