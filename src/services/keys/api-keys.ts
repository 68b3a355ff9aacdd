/**
 * API keys: random, shown once, stored only as a SHA-256 digest with a visible prefix.
 * A SHA-256 digest (not a slow password hash) is right here because a key carries 190 bits of
 * randomness: nothing can be guessed from its digest, and the lookup stays a single index probe.
 */
import { hash, randomBytes } from 'node:crypto';
import { AppError } from '../../errors/catalogue.ts';
import { accountExists, apiKeyById, apiKeysOfAccount, insertApiKey, markApiKeyRevoked, type ApiKeyRow } from '../../store/repositories/api-keys.repository.ts';
import { newId } from '../../util/ids.ts';
import { recordAudit } from '../audit/audit.ts';
import type { Context } from '../context.ts';

/** A stored key as the dashboard and the CLI list it: never the key, nor its digest. */
export interface ApiKey {
  id: string;
  account_id: string;
  label: string;
  prefix: string;
  scopes: string[];
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

function apiKey(row: ApiKeyRow): ApiKey {
  const time = (v: number | null) => (v === null ? null : Number(v));
  return {
    id: row.id,
    account_id: row.account_id,
    label: row.label,
    prefix: row.prefix,
    scopes: row.scopes.split(','),
    created_at: Number(row.created_at),
    last_used_at: time(row.last_used_at),
    revoked_at: time(row.revoked_at),
  };
}

export const SCOPES = [
  'sms:send',
  'sender_ids:read',
  'sender_ids:write',
  'reports:read',
  'account:read',
  'account:write',
  'numbers:read',
  'inbound:read',
  'opt_outs:read',
  'opt_outs:write',
] as const;
export type Scope = (typeof SCOPES)[number];

const KEY_PREFIX = 'pk_live_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_BODY_LENGTH = 32;
/** How much of the key is kept in clear to recognise it (`pk_live_ab12`). */
const VISIBLE_PREFIX_LENGTH = KEY_PREFIX.length + 4;

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
  if (!(await accountExists(ctx.store.db, accountId))) throw new AppError('not_found', `No account ${accountId}.`);
  const now = ctx.clock();
  const key = randomKey();
  const row: ApiKeyRow = {
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
  await ctx.store.db.transaction().execute(async (trx) => {
    await insertApiKey(trx, row);
    await recordAudit(ctx, { action: 'api_key.created', accountId, target: { type: 'api_key', id: row.id }, changes: { label: [null, label], scopes: [null, scopes], prefix: [null, row.prefix] } }, trx);
  });
  return { id: row.id, key, prefix: row.prefix, label, scopes, created_at: now };
}

/** Revokes a key; effective on the next request, since every request reads the key's row. */
export async function revokeApiKey(ctx: Context, keyId: string, accountId?: string): Promise<ApiKey> {
  const key = await ctx.store.db.transaction().execute(async (trx) => {
    const before = await apiKeyById(trx, keyId, accountId);
    if (!before) return undefined;
    await markApiKeyRevoked(trx, keyId, ctx.clock(), accountId);
    const after = await apiKeyById(trx, keyId, accountId);
    // Revoking a revoked key changes nothing, and records nothing.
    if (after && before.revoked_at === null) {
      await recordAudit(ctx, { action: 'api_key.revoked', accountId: after.account_id, target: { type: 'api_key', id: keyId }, changes: { revoked_at: [null, new Date(Number(after.revoked_at)).toISOString()] } }, trx);
    }
    return after;
  });
  if (!key) throw new AppError('not_found', `No API key ${keyId}.`);
  return apiKey(key);
}

export async function listApiKeys(ctx: Context, accountId: string): Promise<ApiKey[]> {
  return (await apiKeysOfAccount(ctx.store.db, accountId)).map(apiKey);
}
