import type { Executor } from '../connect.ts';
import { sql, type Transaction } from 'kysely';
import type { CreditLedgerTable, Database, LedgerKind } from '../database.ts';
import { insertRows } from '../insert-rows.ts';
import { newId } from '../../util/ids.ts';

/**
 * Debits an account if, and only if, its balance covers the amount; returns the new balance or
 * null. The guard is inside the UPDATE itself, so two concurrent debits can never both pass on
 * the same credits, on either database. The caller writes the ledger row in the same transaction.
 */
export async function tryDebit(trx: Transaction<Database>, accountId: string, amount: number): Promise<number | null> {
  const row = await trx
    .updateTable('accounts')
    .set({ credits: sql<number>`credits - ${amount}` })
    .where('id', '=', accountId)
    .where('credits', '>=', amount)
    .returning('credits')
    .executeTakeFirst();
  return row ? Number(row.credits) : null;
}

/** The balance as this transaction sees it (after its own debits), or 0 for an unknown account. */
export async function creditBalance(db: Executor, accountId: string): Promise<number> {
  const row = await db.selectFrom('accounts').select('credits').where('id', '=', accountId).executeTakeFirst();
  return row ? Number(row.credits) : 0;
}

export async function insertLedgerRows(db: Executor, rows: CreditLedgerTable[]): Promise<void> {
  await insertRows(db, 'credit_ledger', rows);
}

/** Adds credits (top-up or refund) and records the ledger row; returns the new balance. */
export async function creditCredits(
  trx: Transaction<Database>,
  accountId: string,
  amount: number,
  kind: LedgerKind,
  reference: string | null,
  note: string | null,
  now: number,
): Promise<number | null> {
  const row = await trx
    .updateTable('accounts')
    .set({ credits: sql<number>`credits + ${amount}` })
    .where('id', '=', accountId)
    .returning('credits')
    .executeTakeFirst();
  if (!row) return null;
  await insertLedgerRow(trx, accountId, amount, kind, reference, note, now);
  return Number(row.credits);
}

async function insertLedgerRow(
  db: Executor,
  accountId: string,
  amount: number,
  kind: LedgerKind,
  reference: string | null,
  note: string | null,
  now: number,
): Promise<void> {
  await db
    .insertInto('credit_ledger')
    .values({ id: newId('led', now), account_id: accountId, amount, kind, reference, note, created_at: now })
    .execute();
}

export async function ledgerSum(db: Executor, accountId: string): Promise<number> {
  const row = await db
    .selectFrom('credit_ledger')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('amount'), sql<number>`0`).as('total'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  return Number(row.total);
}

export async function listLedger(db: Executor, accountId: string, limit: number, offset: number) {
  return db
    .selectFrom('credit_ledger')
    .selectAll()
    .where('account_id', '=', accountId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .offset(offset)
    .execute();
}
