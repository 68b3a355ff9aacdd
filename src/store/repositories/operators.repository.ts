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
