/**
 * API keys (src/services/keys/api-keys.ts) and the access revision that the access cache trusts
 * (src/services/auth/access-cache.ts). The lookups made on every request are prepared statements.
 */
import type { Executor, Store } from '../connect.ts';
import type { ApiKeysTable } from '../database.ts';
import { preparedRead, preparedWrite } from '../prepared-statements.ts';

export type ApiKeyRow = ApiKeysTable;

/** A key with its account's status: what deciding a request's access needs. */
export interface KeyAccessRow {
  key_id: string;
  account_id: string;
  scopes: string;
  revoked_at: number | null;
  last_used_at: number | null;
  status: string;
}

export async function accountExists(db: Executor, accountId: string): Promise<boolean> {
  return (await db.selectFrom('accounts').select('id').where('id', '=', accountId).executeTakeFirst()) !== undefined;
}

export async function insertApiKey(db: Executor, row: ApiKeyRow): Promise<void> {
  await db.insertInto('api_keys').values(row).execute();
}

/** Marks the key revoked unless it already is; `accountId` restricts it to that account. */
export async function markApiKeyRevoked(db: Executor, keyId: string, now: number, accountId?: string): Promise<void> {
  let q = db.updateTable('api_keys').set({ revoked_at: now }).where('id', '=', keyId).where('revoked_at', 'is', null);
  if (accountId) q = q.where('account_id', '=', accountId);
  await q.execute();
}

export async function apiKeyById(db: Executor, keyId: string, accountId?: string): Promise<ApiKeyRow | undefined> {
  let q = db.selectFrom('api_keys').selectAll().where('id', '=', keyId);
  if (accountId) q = q.where('account_id', '=', accountId);
  return q.executeTakeFirst();
}

/** The account's keys, newest first. */
export async function apiKeysOfAccount(db: Executor, accountId: string): Promise<ApiKeyRow[]> {
  return db.selectFrom('api_keys').selectAll().where('account_id', '=', accountId).orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
}

/** The key with this digest and its account's status, on the read connection (prepared). */
export const keyAccessByDigest: (store: Store, digest: string) => Promise<KeyAccessRow | undefined> = preparedRead((db, digest: string) =>
  db
    .selectFrom('api_keys')
    .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
    .select(['api_keys.id as key_id', 'api_keys.account_id', 'api_keys.scopes', 'api_keys.revoked_at', 'api_keys.last_used_at', 'accounts.status'])
    .where('api_keys.digest', '=', digest),
);

/** The key's revocation, scopes and account status, read in the caller's transaction. */
export async function keyAccessById(db: Executor, keyId: string): Promise<Pick<KeyAccessRow, 'revoked_at' | 'scopes' | 'status'> | undefined> {
  return db
    .selectFrom('api_keys')
    .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
    .select(['api_keys.revoked_at', 'api_keys.scopes', 'accounts.status'])
    .where('api_keys.id', '=', keyId)
    .executeTakeFirst();
}

export async function recordKeyUse(db: Executor, keyId: string, now: number): Promise<void> {
  await db.updateTable('api_keys').set({ last_used_at: now }).where('id', '=', keyId).execute();
}

const revisionRow = preparedRead((db, id: number) => db.selectFrom('access_revision').select('value').where('id', '=', id));

/** The access revision (migration 006), on the read connection (prepared). */
export async function readAccessRevision(store: Store): Promise<number> {
  const row = await revisionRow(store, 1);
  return Number(row?.value ?? 0);
}

const revisionInTransaction = preparedWrite((db, id: number) => db.selectFrom('access_revision').select('value').where('id', '=', id));

/** The access revision read in the caller's transaction (a send's commit), compiled once. */
export async function accessRevisionInTransaction(db: Executor): Promise<number> {
  const { rows } = await revisionInTransaction(db, 1);
  return Number((rows[0] as { value: number } | undefined)?.value ?? 0);
}
