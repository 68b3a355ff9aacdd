/** Operator logins for the operator area of the dashboard, each with a role (DECISIONS.md §15). */
import { AppError } from '../../errors/catalogue.ts';
import { isOperatorRole, OPERATOR_ROLES, type OperatorRole } from '../../domain/operator-roles.ts';
import type { OperatorsTable } from '../../store/database.ts';
import { findOperatorByEmail, insertOperator, listOperators as listOperatorRows, operatorEmailTaken, setOperatorRole as setOperatorRoleRow } from '../../store/repositories/operators.repository.ts';
import { newId } from '../../util/ids.ts';
import { recordAudit } from '../audit/audit.ts';
import { hashPassword } from './passwords.ts';
import type { Context } from '../context.ts';

export const MIN_PASSWORD_LENGTH = 12;

/** A person who runs the installation, as the operator console sees them. */
export type Operator = OperatorsTable;

function roleOf(role: string | undefined): OperatorRole {
  const value = role ?? 'admin';
  if (!isOperatorRole(value)) throw new AppError('invalid_request', `Unknown role ${JSON.stringify(value)}; roles are ${OPERATOR_ROLES.join(', ')}.`);
  return value;
}

export async function createOperator(ctx: Context, email: string, password: string, role?: string): Promise<{ id: string; email: string; role: OperatorRole }> {
  const normalised = email.trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+$/.test(normalised)) throw new AppError('invalid_request', `Not an e-mail address: ${email}`);
  if (password.length < MIN_PASSWORD_LENGTH) throw new AppError('invalid_request', `A password has at least ${MIN_PASSWORD_LENGTH} characters.`);
  const chosen = roleOf(role);
  const now = ctx.clock();
  const id = newId('op', now);
  if (await operatorEmailTaken(ctx.store.db, normalised)) throw new AppError('invalid_request', `An operator ${normalised} already exists.`);
  const hash = await hashPassword(password);
  await ctx.store.db.transaction().execute(async (trx) => {
    await insertOperator(trx, { id, email: normalised, password_hash: hash, created_at: now, role: chosen });
    await recordAudit(ctx, { action: 'operator.created', accountId: null, target: { type: 'operator', id }, changes: { email: [null, normalised], role: [null, chosen] } }, trx);
  });
  return { id, email: normalised, role: chosen };
}

/** Changes an operator's role; the next page they open is checked against the new one. */
export async function setOperatorRole(ctx: Context, email: string, role: string): Promise<{ id: string; email: string; role: OperatorRole }> {
  const chosen = roleOf(role);
  const normalised = email.trim().toLowerCase();
  const found = await findOperatorByEmail(ctx.store.db, normalised);
  if (!found) throw new AppError('not_found', `No operator ${normalised}.`);
  if (found.role !== chosen) {
    await ctx.store.db.transaction().execute(async (trx) => {
      await setOperatorRoleRow(trx, found.id, chosen);
      await recordAudit(ctx, { action: 'operator.role_changed', accountId: null, target: { type: 'operator', id: found.id }, changes: { role: [found.role, chosen] } }, trx);
    });
  }
  return { id: found.id, email: found.email, role: chosen };
}

export async function listOperators(ctx: Context): Promise<{ id: string; email: string; role: string; created_at: string }[]> {
  return (await listOperatorRows(ctx.store.db)).map((o) => ({ id: o.id, email: o.email, role: o.role, created_at: new Date(Number(o.created_at)).toISOString() }));
}
