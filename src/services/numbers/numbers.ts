/**
 * Phone numbers assigned to accounts (DECISIONS.md §8): the operator assigns and releases them
 * (CLI, console); an account lists its own (`GET /v1/numbers`) and may send from them. The
 * assignment moves the access revision in its own transaction (migration 013), so every process
 * applies it at its next send.
 */
import { AppError } from '../../errors/catalogue.ts';
import { parseOwnNumber } from '../../domain/own-number.ts';
import { isUniqueViolation } from '../../store/dialect.ts';
import { accountExists } from '../../store/repositories/api-keys.repository.ts';
import { deleteNumber, insertNumber, listNumberRows, type NumberRow } from '../../store/repositories/numbers.repository.ts';
import { recordAudit } from '../audit/audit.ts';
import type { Context } from '../context.ts';
import { checkSmsUrl, ensureSigningToken } from '../twilio/sms-urls.ts';

export type AssignedNumber = NumberRow;

export const MAX_NUMBER_LABEL = 100;

/** The canonical spelling of a number given by the operator or a customer, or `invalid_number`. */
export function canonicalNumber(input: string): string {
  const parsed = input.length > 32 ? { ok: false as const, reason: 'it is too long.' } : parseOwnNumber(input);
  if (!parsed.ok) throw new AppError('invalid_number', `${JSON.stringify(input.slice(0, 40))} is not a number Pigeon can assign: ${parsed.reason}`);
  return parsed.number;
}

export async function assignNumber(ctx: Context, accountId: string, input: string, label?: string, smsUrl?: string): Promise<AssignedNumber> {
  const number = canonicalNumber(input);
  const url = smsUrl === undefined || smsUrl === '' ? null : checkSmsUrl(smsUrl);
  const cleanLabel = label?.trim() || null;
  if (cleanLabel && cleanLabel.length > MAX_NUMBER_LABEL) throw new AppError('invalid_request', `A label has at most ${MAX_NUMBER_LABEL} characters.`);
  if (!(await accountExists(ctx.store.db, accountId))) throw new AppError('not_found', `No account ${accountId}.`);
  const row: NumberRow = { number, account_id: accountId, label: cleanLabel, created_at: ctx.clock(), sms_url: url };
  try {
    await ctx.store.db.transaction().execute(async (trx) => {
      await insertNumber(trx, row);
      await recordAudit(ctx, { action: 'number.assigned', accountId, target: { type: 'number', id: number }, changes: { account_id: [null, accountId], label: [null, cleanLabel], sms_url: [null, url] } }, trx);
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('number_taken', `${number} is already assigned to an account; release it first.`);
    throw error;
  }
  if (url !== null) await ensureSigningToken(ctx, accountId);
  return row;
}

/** Releases a number from whichever account holds it; `not_found` if none does. */
export async function releaseNumber(ctx: Context, input: string): Promise<AssignedNumber> {
  const number = canonicalNumber(input);
  const row = await ctx.store.db.transaction().execute(async (trx) => {
    const deleted = await deleteNumber(trx, number);
    if (deleted) await recordAudit(ctx, { action: 'number.released', accountId: deleted.account_id, target: { type: 'number', id: number }, changes: { account_id: [deleted.account_id, null] } }, trx);
    return deleted;
  });
  if (!row) throw new AppError('not_found', `${number} is not assigned to any account.`);
  return row;
}

/** Newest first; `accountId` narrows to one account. */
export async function listNumbers(ctx: Context, filter: { accountId?: string } = {}): Promise<AssignedNumber[]> {
  return listNumberRows(ctx.store.db, filter);
}
