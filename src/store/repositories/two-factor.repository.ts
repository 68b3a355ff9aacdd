/**
 * Two-factor state of owners and operators (the TOTP secret, when it was turned on, the last step
 * accepted) and their recovery codes' digests. `kind` picks the person's table.
 */
import type { Executor } from '../connect.ts';
import type { RecoveryCodesTable, SessionKind } from '../database.ts';

export interface TwoFactorState {
  totp_secret: string | null;
  totp_enabled_at: number | null;
  totp_last_step: number | null;
}

function tableOf(kind: SessionKind): 'owners' | 'operators' {
  return kind === 'owner' ? 'owners' : 'operators';
}

export async function findTwoFactor(db: Executor, kind: SessionKind, id: string): Promise<TwoFactorState | undefined> {
  const row = await db.selectFrom(tableOf(kind)).select(['totp_secret', 'totp_enabled_at', 'totp_last_step']).where('id', '=', id).executeTakeFirst();
  if (!row) return undefined;
  return {
    totp_secret: row.totp_secret ?? null,
    totp_enabled_at: row.totp_enabled_at == null ? null : Number(row.totp_enabled_at),
    totp_last_step: row.totp_last_step == null ? null : Number(row.totp_last_step),
  };
}

/** Stores a new secret awaiting its first code; refused (false) while two-factor is on. */
export async function setPendingSecret(db: Executor, kind: SessionKind, id: string, secret: string): Promise<boolean> {
  const result = await db
    .updateTable(tableOf(kind))
    .set({ totp_secret: secret, totp_last_step: null })
    .where('id', '=', id)
    .where('totp_enabled_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * Takes a time step as used, only when it is later than the last one taken (the guard is in the
 * UPDATE, so two requests with the same code cannot both pass). `enableAt` also turns two-factor on.
 */
export async function takeStep(db: Executor, kind: SessionKind, id: string, step: number, enableAt?: number): Promise<boolean> {
  const result = await db
    .updateTable(tableOf(kind))
    .set(enableAt === undefined ? { totp_last_step: step } : { totp_last_step: step, totp_enabled_at: enableAt })
    .where('id', '=', id)
    .where('totp_secret', 'is not', null)
    .where((eb) => eb.or([eb('totp_last_step', 'is', null), eb('totp_last_step', '<', step)]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Turns two-factor off and forgets the secret and the recovery codes. */
export async function clearTwoFactor(db: Executor, kind: SessionKind, id: string): Promise<void> {
  await db.updateTable(tableOf(kind)).set({ totp_secret: null, totp_enabled_at: null, totp_last_step: null }).where('id', '=', id).execute();
  await db.deleteFrom('recovery_codes').where('subject_kind', '=', kind).where('subject_id', '=', id).execute();
}

/** Replaces a person's recovery codes with these digests. */
export async function replaceRecoveryCodes(db: Executor, kind: SessionKind, id: string, rows: RecoveryCodesTable[]): Promise<void> {
  await db.deleteFrom('recovery_codes').where('subject_kind', '=', kind).where('subject_id', '=', id).execute();
  await db.insertInto('recovery_codes').values(rows).execute();
}

/** Uses a recovery code once (the guard is in the UPDATE); false when unknown or already used. */
export async function consumeRecoveryCode(db: Executor, kind: SessionKind, id: string, digest: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('recovery_codes')
    .set({ used_at: now })
    .where('subject_kind', '=', kind)
    .where('subject_id', '=', id)
    .where('code_digest', '=', digest)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function unusedRecoveryCodes(db: Executor, kind: SessionKind, id: string): Promise<number> {
  const row = await db
    .selectFrom('recovery_codes')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('subject_kind', '=', kind)
    .where('subject_id', '=', id)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

export async function setAccountRequireTwoFactor(db: Executor, accountId: string, on: boolean): Promise<void> {
  await db.updateTable('accounts').set({ require_2fa: on ? 1 : 0 }).where('id', '=', accountId).execute();
}
