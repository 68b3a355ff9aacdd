/** Operator logins for the operator area of the dashboard. */
import { AppError } from '../../errors/catalogue.ts';
import type { OperatorsTable } from '../../store/database.ts';
import { insertOperator, operatorEmailTaken } from '../../store/repositories/operators.repository.ts';
import { newId } from '../../util/ids.ts';
import { hashPassword } from './passwords.ts';
import type { Context } from '../context.ts';

export const MIN_PASSWORD_LENGTH = 12;

/** A person who runs the installation, as the operator console sees them. */
export type Operator = OperatorsTable;

export async function createOperator(ctx: Context, email: string, password: string): Promise<{ id: string; email: string }> {
  const normalised = email.trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+$/.test(normalised)) throw new AppError('invalid_request', `Not an e-mail address: ${email}`);
  if (password.length < MIN_PASSWORD_LENGTH) throw new AppError('invalid_request', `A password has at least ${MIN_PASSWORD_LENGTH} characters.`);
  const now = ctx.clock();
  const id = newId('op', now);
  if (await operatorEmailTaken(ctx.store.db, normalised)) throw new AppError('invalid_request', `An operator ${normalised} already exists.`);
  await insertOperator(ctx.store.db, { id, email: normalised, password_hash: await hashPassword(password), created_at: now });
  return { id, email: normalised };
}
