/**
 * An account's retention settings (DECISIONS.md §13): shown to its owner in the dashboard, set by
 * the operator (`pigeon account retention`, the console). An account may only be set shorter than
 * the installation's RETENTION_* defaults (`retentionRefusal`).
 */
import { retentionRefusal, type AccountRetention } from '../../domain/retention.ts';
import { AppError } from '../../errors/catalogue.ts';
import { accountRetention, updateAccountRetention } from '../../store/repositories/retention.repository.ts';
import { recordAudit } from '../audit/audit.ts';
import { changesBetween } from '../../domain/audit.ts';
import type { Context } from '../context.ts';
import { retentionOf } from './purge.ts';

export interface RetentionView {
  id: string;
  /** What applies: days, `mask_numbers_days` null when numbers are never masked. */
  retention: { body_days: number; message_days: number; mask_numbers_days: number | null };
  /** Which the account sets itself (otherwise the installation's default applies). */
  overridden: { body_days: boolean; message_days: boolean; mask_numbers_days: boolean };
  installation: { body_days: number; message_days: number; mask_numbers_days: number | null };
}

/** A change: a number of days, or null to follow the installation again. */
export type RetentionChange = Partial<AccountRetention>;

export async function getAccountRetention(ctx: Context, accountId: string): Promise<RetentionView> {
  const row = await accountRetention(ctx.store.db, accountId);
  if (!row) throw new AppError('not_found', `No account ${accountId}.`);
  const days = retentionOf(ctx, row);
  const inst = ctx.config.retention;
  return {
    id: row.id,
    retention: { body_days: days.bodyDays, message_days: days.messageDays, mask_numbers_days: days.maskNumbersDays },
    overridden: { body_days: row.retention_body_days !== null, message_days: row.retention_message_days !== null, mask_numbers_days: row.retention_mask_days !== null },
    installation: { body_days: inst.bodyDays, message_days: inst.messageDays, mask_numbers_days: inst.maskNumbersDays === 0 ? null : inst.maskNumbersDays },
  };
}

export async function setAccountRetention(ctx: Context, accountId: string, change: RetentionChange): Promise<RetentionView> {
  const refusal = retentionRefusal(ctx.config.retention, change);
  if (refusal) throw new AppError('invalid_request', refusal);
  const before = await accountRetention(ctx.store.db, accountId);
  if (!before) throw new AppError('not_found', `No account ${accountId}.`);
  const patch: Parameters<typeof updateAccountRetention>[2] = {};
  if (change.bodyDays !== undefined) patch.retention_body_days = change.bodyDays;
  if (change.messageDays !== undefined) patch.retention_message_days = change.messageDays;
  if (change.maskNumbersDays !== undefined) patch.retention_mask_days = change.maskNumbersDays;
  await ctx.store.db.transaction().execute(async (trx) => {
    await updateAccountRetention(trx, accountId, patch);
    const { id: _id, ...was } = before;
    const changes = changesBetween(was, { ...was, ...patch });
    if (Object.keys(changes).length > 0) await recordAudit(ctx, { action: 'account.retention_changed', accountId, target: { type: 'account', id: accountId }, changes }, trx);
  });
  return getAccountRetention(ctx, accountId);
}

/** "30 days", "never": how the dashboard and the CLI say a setting. */
export function describeDays(days: number | null): string {
  if (days === null) return 'never';
  if (days === 0) return 'removed at the next purge';
  return days === 1 ? '1 day' : `${days} days`;
}
