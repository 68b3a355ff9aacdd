/** Rows of `operators`: the people who run the installation (operator console, CLI). */
import type { Executor } from '../connect.ts';
import type { OperatorsTable } from '../database.ts';

export async function findOperatorByEmail(db: Executor, email: string): Promise<OperatorsTable | undefined> {
  return db.selectFrom('operators').selectAll().where('email', '=', email).executeTakeFirst();
}

export async function findOperatorById(db: Executor, id: string): Promise<OperatorsTable | undefined> {
  return db.selectFrom('operators').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Whether an operator already has this address. */
export async function operatorEmailTaken(db: Executor, email: string): Promise<boolean> {
  return (await db.selectFrom('operators').select('id').where('email', '=', email).executeTakeFirst()) !== undefined;
}

export async function insertOperator(db: Executor, row: OperatorsTable): Promise<void> {
  await db.insertInto('operators').values(row).execute();
}

export async function setOperatorRole(db: Executor, id: string, role: string): Promise<void> {
  await db.updateTable('operators').set({ role }).where('id', '=', id).execute();
}

/** Every operator, oldest first (a handful per installation). */
export async function listOperators(db: Executor): Promise<Pick<OperatorsTable, 'id' | 'email' | 'role' | 'created_at'>[]> {
  return db.selectFrom('operators').select(['id', 'email', 'role', 'created_at']).orderBy('created_at').orderBy('id').limit(1000).execute();
}
