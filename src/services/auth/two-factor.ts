/**
 * Two-factor sign-in for the people of the dashboard and the operator console (§15): set-up shows
 * a secret (and its QR code) and turns two-factor on only after a valid code; 10 single-use
 * recovery codes are shown once and kept as SHA-256 digests (each carries 80 random bits, so a
 * slow hash would add nothing); sign-in then asks for a code after the password. A code is checked
 * under the password's lockout (§9: the same e-mail and address keys, so guessing codes is as slow
 * as guessing passwords), and a TOTP time step is accepted once only.
 *
 * Each change is one exported function (start, confirm, disable, reset, require, new recovery
 * codes, and the sign-in's code check), recorded in the audit log in the change's own transaction:
 * never with the secret, a code or a recovery code.
 */
import { createHash, randomBytes } from 'node:crypto';
import QRCode from 'qrcode';
import { AppError } from '../../errors/catalogue.ts';
import type { AuditAction } from '../../domain/audit.ts';
import type { Executor } from '../../store/connect.ts';
import type { SessionKind } from '../../store/database.ts';
import {
  clearTwoFactor,
  consumeRecoveryCode,
  findTwoFactor,
  replaceRecoveryCodes,
  setAccountRequireTwoFactor,
  setPendingSecret,
  takeStep,
  unusedRecoveryCodes,
  type TwoFactorState,
} from '../../store/repositories/two-factor.repository.ts';
import { findAccount } from '../../store/repositories/accounts.repository.ts';
import { findOwnerById } from '../../store/repositories/owners.repository.ts';
import { findOperatorByEmail } from '../../store/repositories/operators.repository.ts';
import { deleteSessionsOf } from '../../store/repositories/sessions.repository.ts';
import { newId } from '../../util/ids.ts';
import type { Context } from '../context.ts';
import { recordAudit, type AuditEntry } from '../audit/audit.ts';
import { releaseLoginAttempt, reserveLoginAttempt } from './login-throttle.ts';
import { newTotpSecret, totpStepOf, totpUri } from './totp.ts';

export const RECOVERY_CODES = 10;
const WRONG_CODE = 'The code is wrong or was already used.';

/** A person with two-factor: who, for the lockout keys and the authenticator's label. */
export interface TwoFactorPerson {
  kind: SessionKind;
  id: string;
  email: string;
}

/** The actions of a person's own two-factor changes, by the kind of person. */
const OWN_ACTIONS = {
  owner: { enabled: 'member.two_factor_enabled', recovery_used: 'member.recovery_code_used', regenerated: 'member.recovery_codes_regenerated' },
  operator: { enabled: 'operator.two_factor_enabled', recovery_used: 'operator.recovery_code_used', regenerated: 'operator.recovery_codes_regenerated' },
} as const satisfies Record<SessionKind, Record<string, AuditAction>>;

/**
 * Records a change of a person's own two-factor, in `trx`: the person is the target (and, when the
 * context names nobody, such as the sign-in's code step, the actor), the account theirs.
 */
async function recordOwn(ctx: Context, trx: Executor, person: TwoFactorPerson, action: AuditAction, changes: AuditEntry['changes'] = {}): Promise<void> {
  const accountId = person.kind === 'owner' ? ((await findOwnerById(trx, person.id))?.account_id ?? null) : null;
  const type = person.kind === 'owner' ? 'member' : 'operator';
  await recordAudit(ctx, { action, accountId, target: { type, id: person.id }, changes, ...(ctx.acting ? {} : { actor: { type, id: person.id, email: person.email } }) }, trx);
}

function digest(code: string): string {
  return createHash('sha256').update(code).digest('hex');
}

/** Recovery codes are typed by hand: case, spaces and dashes do not matter. */
function normaliseRecoveryCode(input: string): string {
  return input.toLowerCase().replace(/[\s-]/g, '');
}

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** 16 base32 characters (80 random bits), shown as xxxx-xxxx-xxxx-xxxx. */
function newRecoveryCode(): string {
  const bytes = randomBytes(10);
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return out.match(/.{4}/g)!.join('-');
}

async function stateOf(ctx: Context, person: TwoFactorPerson): Promise<TwoFactorState> {
  const state = await findTwoFactor(ctx.store.db, person.kind, person.id);
  if (!state) throw new AppError('not_found', 'No such person.');
  return state;
}

export async function twoFactorEnabled(ctx: Context, person: Pick<TwoFactorPerson, 'kind' | 'id'>): Promise<boolean> {
  return (await findTwoFactor(ctx.store.db, person.kind, person.id))?.totp_enabled_at != null;
}

export interface TwoFactorStatus {
  enabled: boolean;
  /** While setting up: the secret, its otpauth:// URI and the URI as an SVG QR code. */
  setup: { secret: string; uri: string; qrSvg: string } | null;
  recoveryCodesLeft: number;
}

export async function twoFactorStatus(ctx: Context, person: TwoFactorPerson): Promise<TwoFactorStatus> {
  const state = await stateOf(ctx, person);
  if (state.totp_enabled_at != null) return { enabled: true, setup: null, recoveryCodesLeft: await unusedRecoveryCodes(ctx.store.db, person.kind, person.id) };
  if (state.totp_secret == null) return { enabled: false, setup: null, recoveryCodesLeft: 0 };
  const uri = totpUri(state.totp_secret, person.email);
  const qrSvg = await QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
  return { enabled: false, setup: { secret: state.totp_secret, uri, qrSvg }, recoveryCodesLeft: 0 };
}

/** Starts (or starts again) setting up two-factor: a new secret, not yet in force. */
export async function startTwoFactorSetup(ctx: Context, person: TwoFactorPerson): Promise<void> {
  if (!(await setPendingSecret(ctx.store.db, person.kind, person.id, newTotpSecret()))) throw new AppError('invalid_request', 'Two-factor is already on.');
}

/**
 * Checks a TOTP code (taking its step, so that it is not accepted again) or, when `allowRecovery`,
 * a recovery code (using it up), under the login lockout. Throws `invalid_credentials` when wrong,
 * `login_locked` when too many were wrong. The step or code is taken, and `then` (the change the
 * code allows) is made, in one transaction; a recovery code used is recorded in it.
 */
async function checkCode(
  ctx: Context,
  person: TwoFactorPerson,
  code: string,
  ip: string,
  opts: { allowRecovery: boolean; enableAt?: number; then?: (trx: Executor) => Promise<void> },
): Promise<'totp' | 'recovery'> {
  const attempt = await reserveLoginAttempt(ctx, person.kind, person.email, ip);
  const state = await stateOf(ctx, person);
  const trimmed = code.trim().slice(0, 64);
  const used = await ctx.store.db.transaction().execute(async (trx) => {
    let taken: 'totp' | 'recovery' | null = null;
    if (state.totp_secret != null) {
      const step = totpStepOf(state.totp_secret, trimmed.replace(/\s/g, ''), ctx.clock());
      if (step !== null && (await takeStep(trx, person.kind, person.id, step, opts.enableAt))) taken = 'totp';
    }
    if (taken === null && opts.allowRecovery && state.totp_enabled_at != null) {
      const normalised = normaliseRecoveryCode(trimmed);
      if (/^[a-z2-7]{16}$/.test(normalised) && (await consumeRecoveryCode(trx, person.kind, person.id, digest(normalised), ctx.clock()))) {
        taken = 'recovery';
        await recordOwn(ctx, trx, person, OWN_ACTIONS[person.kind].recovery_used, { unused: [null, await unusedRecoveryCodes(trx, person.kind, person.id)] });
      }
    }
    if (taken !== null && opts.then) await opts.then(trx);
    return taken;
  });
  if (used === null) throw new AppError('invalid_credentials', WRONG_CODE);
  await releaseLoginAttempt(ctx, attempt);
  return used;
}

function newRecoveryRows(person: TwoFactorPerson, now: number): { codes: string[]; rows: Parameters<typeof replaceRecoveryCodes>[3] } {
  const codes = Array.from({ length: RECOVERY_CODES }, newRecoveryCode);
  const rows = codes.map((c) => ({ id: newId('rcv', now), subject_kind: person.kind, subject_id: person.id, code_digest: digest(normaliseRecoveryCode(c)), created_at: now, used_at: null }));
  return { codes, rows };
}

/**
 * Turns two-factor on with the first valid code of the secret being set up, and returns the 10
 * recovery codes (shown once: only their digests are kept).
 */
export async function confirmTwoFactor(ctx: Context, person: TwoFactorPerson, code: string, ip: string): Promise<string[]> {
  const state = await stateOf(ctx, person);
  if (state.totp_enabled_at != null) throw new AppError('invalid_request', 'Two-factor is already on.');
  if (state.totp_secret == null) throw new AppError('invalid_request', 'Start the set-up first.');
  const now = ctx.clock();
  const { codes, rows } = newRecoveryRows(person, now);
  await checkCode(ctx, person, code, ip, {
    allowRecovery: false,
    enableAt: now,
    then: async (trx) => {
      await replaceRecoveryCodes(trx, person.kind, person.id, rows);
      await recordOwn(ctx, trx, person, OWN_ACTIONS[person.kind].enabled, { two_factor: [false, true] });
    },
  });
  return codes;
}

/**
 * New recovery codes in place of the old ones (all of them, used or not), with a valid code;
 * returns them (shown once).
 */
export async function regenerateRecoveryCodes(ctx: Context, person: TwoFactorPerson, code: string, ip: string): Promise<string[]> {
  if (!(await twoFactorEnabled(ctx, person))) throw new AppError('invalid_request', 'Two-factor is not on.');
  const { codes, rows } = newRecoveryRows(person, ctx.clock());
  await checkCode(ctx, person, code, ip, {
    allowRecovery: false,
    then: async (trx) => {
      await replaceRecoveryCodes(trx, person.kind, person.id, rows);
      await recordOwn(ctx, trx, person, OWN_ACTIONS[person.kind].regenerated, { unused: [null, RECOVERY_CODES] });
    },
  });
  return codes;
}

/** The second step of a sign-in: a TOTP code or a recovery code. */
export async function verifySignInCode(ctx: Context, person: TwoFactorPerson, code: string, ip: string): Promise<'totp' | 'recovery'> {
  return checkCode(ctx, person, code, ip, { allowRecovery: true });
}

/**
 * Turns one's own two-factor off, with a valid code; refused where the account requires it. The
 * console offers operators no way to: OPERATOR_REQUIRE_2FA or `reset-2fa` decide theirs.
 */
export async function disableTwoFactor(ctx: Context, person: TwoFactorPerson & { kind: 'owner' }, code: string, ip: string, required: boolean): Promise<void> {
  if (required) throw new AppError('invalid_request', 'Two-factor is required here: it cannot be turned off.');
  if (!(await twoFactorEnabled(ctx, person))) throw new AppError('invalid_request', 'Two-factor is not on.');
  await checkCode(ctx, person, code, ip, {
    allowRecovery: true,
    then: async (trx) => {
      await clearTwoFactor(trx, person.kind, person.id);
      await recordOwn(ctx, trx, person, 'member.two_factor_disabled', { two_factor: [true, false] });
    },
  });
}

/**
 * An owner resets a member's two-factor (a lost phone): it is off, and the member's sessions end;
 * where the account requires it, the member sets it up again at the next sign-in.
 */
export async function resetMemberTwoFactor(ctx: Context, accountId: string, memberId: string): Promise<void> {
  const member = await findOwnerById(ctx.store.db, memberId);
  if (!member || member.account_id !== accountId) throw new AppError('not_found', 'No such member of this account.');
  await ctx.store.db.transaction().execute(async (trx) => {
    await clearTwoFactor(trx, 'owner', memberId);
    await deleteSessionsOf(trx, 'owner', memberId);
    await recordAudit(ctx, { action: 'member.two_factor_reset', accountId, target: { type: 'member', id: memberId }, changes: { two_factor: [member.totp_enabled_at != null, false] } }, trx);
  });
}

/** `pigeon operator reset-2fa EMAIL`: the operator's two-factor off and every session of theirs ended. */
export async function resetOperatorTwoFactor(ctx: Context, email: string): Promise<{ id: string; email: string }> {
  const operator = await findOperatorByEmail(ctx.store.db, email.trim().toLowerCase());
  if (!operator) throw new AppError('not_found', `No operator ${email}.`);
  await ctx.store.db.transaction().execute(async (trx) => {
    await clearTwoFactor(trx, 'operator', operator.id);
    await deleteSessionsOf(trx, 'operator', operator.id);
    await recordAudit(ctx, { action: 'operator.two_factor_reset', accountId: null, target: { type: 'operator', id: operator.id }, changes: { two_factor: [operator.totp_enabled_at != null, false] } }, trx);
  });
  return { id: operator.id, email: operator.email };
}

/** An owner requires two-factor of every member of the account (or no longer does). */
export async function setRequireTwoFactor(ctx: Context, accountId: string, on: boolean): Promise<void> {
  await ctx.store.db.transaction().execute(async (trx) => {
    const before = Number((await findAccount(trx, accountId))?.require_2fa ?? 0) === 1;
    await setAccountRequireTwoFactor(trx, accountId, on);
    if (before !== on) await recordAudit(ctx, { action: 'account.two_factor_requirement_changed', accountId, target: { type: 'account', id: accountId }, changes: { require_2fa: [before, on] } }, trx);
  });
}
