/**
 * API keys: random, shown once, stored only as a SHA-256 digest with a visible prefix.
 * A SHA-256 digest (not a slow password hash) is right here because a key carries 190 bits of
 * randomness: nothing can be guessed from its digest, and the lookup stays a single index probe.
 */
import { hash, randomBytes } from 'node:crypto';
import { AppError } from '../errors/catalogue.ts';
import type { ApiKeysTable } from '../store/database.ts';
import { newId } from '../util/ids.ts';
import { preparedRead } from '../store/prepared-statements.ts';
import { accessSnapshot, decideAccess, lastAccessSnapshot, type AccessSnapshot } from './access-cache.ts';
import type { Executor } from '../store/connect.ts';
import type { Context } from './context.ts';

export const SCOPES = ['sms:send', 'sender_ids:read', 'sender_ids:write', 'reports:read', 'account:read'] as const;
export type Scope = (typeof SCOPES)[number];

const KEY_PREFIX = 'pk_live_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_BODY_LENGTH = 32;
const KEY_PATTERN = /^pk_live_[0-9A-Za-z]{32}$/;
/** How much of the key is kept in clear to recognise it (`pk_live_ab12`). */
const VISIBLE_PREFIX_LENGTH = KEY_PREFIX.length + 4;
/** last_used_at is a hint for people, so it is written at most this often per key. */
const LAST_USED_RESOLUTION_MS = 60_000;

export function digestKey(key: string): string {
  return hash('sha256', key, 'hex');
}

function randomKey(): string {
  // Rejection sampling keeps every base62 character equally likely.
  let body = '';
  while (body.length < KEY_BODY_LENGTH) {
    for (const byte of randomBytes(48)) {
      if (byte < 248 && body.length < KEY_BODY_LENGTH) body += BASE62[byte % 62];
    }
  }
  return KEY_PREFIX + body;
}

export function parseScopes(input: string | readonly string[] | undefined): Scope[] {
  if (input === undefined) return [...SCOPES];
  const list = (typeof input === 'string' ? input.split(',') : [...input]).map((s) => s.trim()).filter(Boolean);
  if (list.length === 0) return [...SCOPES];
  for (const s of list) {
    if (!(SCOPES as readonly string[]).includes(s)) {
      throw new AppError('invalid_request', `Unknown scope ${JSON.stringify(s)}; scopes are ${SCOPES.join(', ')}.`);
    }
  }
  return [...new Set(list)] as Scope[];
}

export interface CreatedKey {
  id: string;
  /** The full key: shown once, never stored. */
  key: string;
  prefix: string;
  label: string;
  scopes: Scope[];
  created_at: number;
}

export async function createApiKey(
  ctx: Context,
  accountId: string,
  input: { label: string; scopes?: string | readonly string[] },
): Promise<CreatedKey> {
  const label = input.label.trim();
  if (!label || label.length > 100) throw new AppError('invalid_request', 'A key needs a label of 1 to 100 characters.');
  const scopes = parseScopes(input.scopes);
  const account = await ctx.store.db.selectFrom('accounts').select('id').where('id', '=', accountId).executeTakeFirst();
  if (!account) throw new AppError('not_found', `No account ${accountId}.`);
  const now = ctx.clock();
  const key = randomKey();
  const row: ApiKeysTable = {
    id: newId('key', now),
    account_id: accountId,
    label,
    prefix: key.slice(0, VISIBLE_PREFIX_LENGTH),
    digest: digestKey(key),
    scopes: scopes.join(','),
    created_at: now,
    last_used_at: null,
    revoked_at: null,
  };
  await ctx.store.db.insertInto('api_keys').values(row).execute();
  return { id: row.id, key, prefix: row.prefix, label, scopes, created_at: now };
}

/** Revokes a key; effective on the next request, since every request reads the key's row. */
export async function revokeApiKey(ctx: Context, keyId: string, accountId?: string): Promise<ApiKeysTable> {
  let q = ctx.store.db.updateTable('api_keys').set({ revoked_at: ctx.clock() }).where('id', '=', keyId).where('revoked_at', 'is', null);
  if (accountId) q = q.where('account_id', '=', accountId);
  await q.execute();
  let read = ctx.store.db.selectFrom('api_keys').selectAll().where('id', '=', keyId);
  if (accountId) read = read.where('account_id', '=', accountId);
  const key = await read.executeTakeFirst();
  if (!key) throw new AppError('not_found', `No API key ${keyId}.`);
  return key;
}

export async function listApiKeys(ctx: Context, accountId: string): Promise<ApiKeysTable[]> {
  return ctx.store.db
    .selectFrom('api_keys')
    .selectAll()
    .where('account_id', '=', accountId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
}

const keyByDigest = preparedRead((db, digest: string) =>
  db
    .selectFrom('api_keys')
    .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
    .select(['api_keys.id as key_id', 'api_keys.account_id', 'api_keys.scopes', 'api_keys.revoked_at', 'api_keys.last_used_at', 'accounts.status'])
    .where('api_keys.digest', '=', digest),
);

export interface Principal {
  accountId: string;
  keyId: string;
  scopes: ReadonlySet<string>;
  /** What the request was authenticated against, for its other access checks (the Sender ID). */
  access: AccessSnapshot;
}

interface KeyEntry extends Omit<Principal, 'access'> {
  revoked: boolean;
  suspended: boolean;
  /** When this process last saw last_used_at written (or read it). */
  lastUsedAt: number | null;
}

async function keyEntry(ctx: Context, snapshot: AccessSnapshot, digest: string): Promise<KeyEntry | undefined> {
  // Unknown keys are not cached: anybody can present any number of them.
  return snapshot.get('key', digest, async (): Promise<KeyEntry | undefined> => {
    const row = await keyByDigest(ctx.store, digest);
    if (!row) return undefined;
    return {
      accountId: row.account_id,
      keyId: row.key_id,
      scopes: new Set(row.scopes.split(',')),
      revoked: row.revoked_at !== null,
      suspended: row.status === 'suspended',
      lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
    };
  });
}

/** Why a key may not make a request needing `scope`, or null if it may. */
function keyRefusal(entry: Pick<KeyEntry, 'revoked' | 'suspended' | 'scopes'> | undefined, scope: Scope | undefined): AppError | null {
  if (!entry) return new AppError('invalid_api_key');
  if (entry.revoked) return new AppError('api_key_revoked');
  if (entry.suspended) return new AppError('account_suspended');
  if (scope && !entry.scopes.has(scope)) return new AppError('insufficient_permissions', `This API key lacks the ${scope} scope.`);
  return null;
}

export interface AuthenticateOptions {
  /** The scope the request needs. */
  scope?: Scope;
  /**
   * The request's writes check the access revision as they commit (sends): the revision is not
   * read now, only a refusal is confirmed against it (access-cache.ts).
   */
  checkedAtCommit?: boolean;
}

/**
 * Resolves an `Authorization` header to its account. The header is matched exactly: the scheme
 * `Bearer` (any case), one space, the key; nothing is trimmed, so stray whitespace is a 401.
 * Every failure before the key is found gives the same `invalid_api_key`, so a caller learns
 * nothing about which keys or prefixes exist. Known keys are cached per access revision
 * (access-cache.ts), so a revocation or suspension still applies to the very next request.
 */
export async function authenticate(ctx: Context, header: string | undefined, options: AuthenticateOptions = {}): Promise<Principal> {
  const match = header === undefined ? null : /^Bearer (.*)$/is.exec(header);
  const key = match?.[1];
  if (key === undefined || !KEY_PATTERN.test(key)) throw new AppError('invalid_api_key');
  const digest = digestKey(key);
  const { value: entry, snapshot } = await decideAccess<KeyEntry>(
    ctx.store,
    options.checkedAtCommit ? await lastAccessSnapshot(ctx.store) : await accessSnapshot(ctx.store),
    async (s) => {
      const found = await keyEntry(ctx, s, digest);
      const refusal = keyRefusal(found, options.scope);
      return refusal ? { refusal } : { value: found! };
    },
  );
  const now = ctx.clock();
  if (entry.lastUsedAt === null || now - entry.lastUsedAt > LAST_USED_RESOLUTION_MS) {
    entry.lastUsedAt = now;
    ctx.store.db
      .updateTable('api_keys')
      .set({ last_used_at: now })
      .where('id', '=', entry.keyId)
      .execute()
      .catch((err: unknown) => ctx.log.warn({ err }, 'could not record key use'));
  }
  return { accountId: entry.accountId, keyId: entry.keyId, scopes: entry.scopes, access: snapshot };
}

/**
 * Whether the key may still make a request needing `scope`, read inside the caller's transaction
 * (a send committing under a newer access revision than it was checked with).
 */
export async function keyRefusalNow(db: Executor, keyId: string, scope: Scope): Promise<AppError | null> {
  const row = await db
    .selectFrom('api_keys')
    .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
    .select(['api_keys.revoked_at', 'api_keys.scopes', 'accounts.status'])
    .where('api_keys.id', '=', keyId)
    .executeTakeFirst();
  return keyRefusal(row && { revoked: row.revoked_at !== null, suspended: row.status === 'suspended', scopes: new Set(row.scopes.split(',')) }, scope);
}
