/**
 * The account's quiet-hours sending window (DECISIONS.md §16): `GET|PUT /v1/account/quiet-hours`
 * and the dashboard's Settings → Quiet hours. Marketing messages reach a phone only inside it, in
 * the recipient's local time (domain/quiet-hours.ts); 08:00-20:00 unless the account sets another,
 * never wider than 08:00-21:00.
 */
import { AppError } from '../../errors/catalogue.ts';
import { DEFAULT_WINDOW, formatMinutes, parseWindow, type SendingWindow } from '../../domain/quiet-hours.ts';
import type { Executor } from '../../store/connect.ts';
import { findAccountQuietHours, setAccountQuietHours } from '../../store/repositories/accounts.repository.ts';
import { recordAudit } from '../audit/audit.ts';
import type { Context } from '../context.ts';

export interface QuietHours {
  start: string;
  end: string;
}

export function quietHoursOf(window: SendingWindow): QuietHours {
  return { start: formatMinutes(window.start), end: formatMinutes(window.end) };
}

/** The account's window; the default for an account that set none. */
export async function accountWindow(db: Executor, accountId: string): Promise<SendingWindow> {
  const row = await findAccountQuietHours(db, accountId);
  if (!row) throw new AppError('not_found', `No account ${accountId}.`);
  if (row.quiet_hours_start === null || row.quiet_hours_end === null) return DEFAULT_WINDOW;
  return { start: row.quiet_hours_start, end: row.quiet_hours_end };
}

export async function getQuietHours(ctx: Context, accountId: string): Promise<QuietHours> {
  return quietHoursOf(await accountWindow(ctx.store.db, accountId));
}

/** Sets the window: `invalid_request` (naming the field) for a bad time or a window wider than 08:00-21:00. */
export async function setQuietHours(ctx: Context, accountId: string, start: string, end: string): Promise<QuietHours> {
  const check = parseWindow(start, end);
  if (!check.ok) throw new AppError('invalid_request', check.reason, { details: [{ field: 'start', code: 'invalid_request', message: check.reason }] });
  const after = quietHoursOf(check.window);
  await ctx.store.db.transaction().execute(async (trx) => {
    const before = quietHoursOf(await accountWindow(trx, accountId));
    await setAccountQuietHours(trx, accountId, check.window.start, check.window.end);
    if (before.start !== after.start || before.end !== after.end) {
      await recordAudit(ctx, { action: 'account.quiet_hours_changed', accountId, target: { type: 'account', id: accountId }, changes: { quiet_hours: [`${before.start}-${before.end}`, `${after.start}-${after.end}`] } }, trx);
    }
  });
  return after;
}
