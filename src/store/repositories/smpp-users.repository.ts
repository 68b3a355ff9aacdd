/**
 * SMPP users (an account's credentials for binding) and the live binds of every process
 * (src/services/smpp-access/). Binds are rows so that processes without the sockets (the CLI, the
 * dashboard of another process) can list them; a row not refreshed for a while is a bind whose
 * process died and is ignored.
 */
import type { Executor } from '../connect.ts';
import type { SmppBindsTable, SmppUsersTable } from '../database.ts';

export type SmppUserRow = SmppUsersTable;
export type SmppBindRow = SmppBindsTable;

function numeric<T extends { created_at: number; rotated_at: number; tps: number; max_binds: number }>(row: T): T {
  return { ...row, created_at: Number(row.created_at), rotated_at: Number(row.rotated_at), tps: Number(row.tps), max_binds: Number(row.max_binds) };
}

/** A system_id already taken is a unique violation. */
export async function insertSmppUser(db: Executor, row: SmppUserRow): Promise<void> {
  await db.insertInto('smpp_users').values(row).execute();
}

export async function smppUserRow(db: Executor, systemId: string): Promise<SmppUserRow | undefined> {
  const row = await db.selectFrom('smpp_users').selectAll().where('system_id', '=', systemId).executeTakeFirst();
  return row && numeric(row);
}

/** The user with its account's status: what a bind checks. */
export async function smppUserForBind(db: Executor, systemId: string): Promise<(SmppUserRow & { account_status: string }) | undefined> {
  const row = await db
    .selectFrom('smpp_users')
    .innerJoin('accounts', 'accounts.id', 'smpp_users.account_id')
    .selectAll('smpp_users')
    .select('accounts.status as account_status')
    .where('smpp_users.system_id', '=', systemId)
    .executeTakeFirst();
  return row && numeric(row);
}

/** Oldest first; `accountId` narrows to one account. */
export async function listSmppUserRows(db: Executor, filter: { accountId?: string } = {}): Promise<SmppUserRow[]> {
  let q = db.selectFrom('smpp_users').selectAll().orderBy('created_at', 'asc').orderBy('system_id', 'asc');
  if (filter.accountId) q = q.where('account_id', '=', filter.accountId);
  return (await q.execute()).map(numeric);
}

/** The row after the change, or undefined when there is no such user. */
export async function updateSmppUserPassword(db: Executor, systemId: string, passwordHash: string, rotatedAt: number): Promise<SmppUserRow | undefined> {
  const row = await db
    .updateTable('smpp_users')
    .set({ password_hash: passwordHash, rotated_at: rotatedAt })
    .where('system_id', '=', systemId)
    .returningAll()
    .executeTakeFirst();
  return row && numeric(row);
}

/** Removes the user and what waits for it; the row removed, or undefined. */
export async function deleteSmppUser(db: Executor, systemId: string): Promise<SmppUserRow | undefined> {
  await db.deleteFrom('smpp_outbox').where('system_id', '=', systemId).execute();
  const row = await db.deleteFrom('smpp_users').where('system_id', '=', systemId).returningAll().executeTakeFirst();
  return row && numeric(row);
}

/**
 * What the processes holding binds compare with what they proved at bind: the user's password
 * hash (a rotation changes it) and its account's status, for each of `systemIds` that still exists.
 */
export async function smppUserStates(db: Executor, systemIds: readonly string[]): Promise<Map<string, { password_hash: string; account_status: string }>> {
  const out = new Map<string, { password_hash: string; account_status: string }>();
  if (systemIds.length === 0) return out;
  const rows = await db
    .selectFrom('smpp_users')
    .innerJoin('accounts', 'accounts.id', 'smpp_users.account_id')
    .select(['smpp_users.system_id', 'smpp_users.password_hash', 'accounts.status as account_status'])
    .where('smpp_users.system_id', 'in', [...new Set(systemIds)])
    .execute();
  for (const r of rows) out.set(r.system_id, { password_hash: r.password_hash, account_status: r.account_status });
  return out;
}

export async function insertSmppBind(db: Executor, row: SmppBindRow): Promise<void> {
  await db.insertInto('smpp_binds').values(row).execute();
}

/**
 * Refreshes the binds a process still holds in one statement, and writes the submit counts of
 * those given with `submits` (the ones that changed).
 */
export async function touchSmppBinds(db: Executor, binds: readonly { id: string; submits?: number }[], now: number): Promise<void> {
  if (binds.length === 0) return;
  await db.updateTable('smpp_binds').set({ seen_at: now }).where('id', 'in', binds.map((b) => b.id)).execute();
  for (const b of binds) if (b.submits !== undefined) await db.updateTable('smpp_binds').set({ submits: b.submits }).where('id', '=', b.id).execute();
}

export async function deleteSmppBind(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('smpp_binds').where('id', '=', id).execute();
}

/** Binds refreshed since `seenSince`, oldest first; `systemIds` narrows them. Older rows are removed. */
export async function liveSmppBinds(db: Executor, seenSince: number, systemIds?: readonly string[]): Promise<SmppBindRow[]> {
  await db.deleteFrom('smpp_binds').where('seen_at', '<', seenSince).execute();
  if (systemIds && systemIds.length === 0) return [];
  let q = db.selectFrom('smpp_binds').selectAll().orderBy('since', 'asc').orderBy('id', 'asc');
  if (systemIds) q = q.where('system_id', 'in', [...new Set(systemIds)]);
  return (await q.execute()).map((r) => ({ ...r, since: Number(r.since), seen_at: Number(r.seen_at), submits: Number(r.submits) }));
}
