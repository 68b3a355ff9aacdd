/**
 * The access decision: may this key make this request, from this Sender ID, for this account.
 * Every check of a key (revoked, its account suspended, its scopes) and of the Sender ID a send
 * names is made here, whether from the access cache (access-cache.ts) when the request arrives,
 * or in the sending transaction when it commits under a newer access revision.
 *
 * A send authenticates without reading the access revision (`checkedAtCommit`): its commit reads
 * it (acceptance-batcher.ts) and checks again with `grantRefusalNow` if it moved. A send that ends
 * without committing (an idempotent replay, an error before the commit) confirms its access with
 * `confirmAccess` before it answers, so a withdrawn key still gets its refusal first.
 */
import { AppError } from '../../errors/catalogue.ts';
import { senderNameKey } from '../../domain/sender-id-name.ts';
import type { Executor } from '../../store/connect.ts';
import { keyAccessByDigest, keyAccessById, recordKeyUse } from '../../store/repositories/api-keys.repository.ts';
import { senderAccessByKey, senderAccessInTransaction, type SenderAccessRow } from '../../store/repositories/sender-ids.repository.ts';
import { ownedNumber, ownedNumberInTransaction } from '../../store/repositories/numbers.repository.ts';
import { numberKeyOfSender } from '../../domain/own-number.ts';
import { optedOutAmong, optedOutPhones } from '../../store/repositories/opt-outs.repository.ts';
import { accountStatuses } from '../../store/repositories/accounts.repository.ts';
import { accessSnapshot, decideAccess, lastAccessSnapshot, type AccessSnapshot } from './access-cache.ts';
import { digestKey, type Scope } from '../keys/api-keys.ts';
import type { Context } from '../context.ts';

const KEY_PATTERN = /^pk_live_[0-9A-Za-z]{32}$/;
/** last_used_at is a hint for people, so it is written at most this often per key. */
const LAST_USED_RESOLUTION_MS = 60_000;

export interface Principal {
  accountId: string;
  keyId: string;
  scopes: ReadonlySet<string>;
  /** What the request was authenticated against, for its other access checks (the Sender ID). */
  access: AccessSnapshot;
  /** The key's digest and the scope the request needs, to confirm access later (`confirmAccess`). */
  digest: string;
  scope: Scope | undefined;
}

interface KeyEntry {
  accountId: string;
  keyId: string;
  scopes: ReadonlySet<string>;
  revoked: boolean;
  suspended: boolean;
  /** When this process last saw last_used_at written (or read it). */
  lastUsedAt: number | null;
}

async function keyEntry(ctx: Context, snapshot: AccessSnapshot, digest: string): Promise<KeyEntry | undefined> {
  // Unknown keys are not cached: anybody can present any number of them.
  return snapshot.get('key', digest, async (): Promise<KeyEntry | undefined> => {
    const row = await keyAccessByDigest(ctx.store, digest);
    if (!row) return undefined;
    return {
      accountId: row.account_id,
      keyId: row.key_id,
      scopes: new Set(row.scopes.split(',')),
      revoked: row.revoked_at !== null,
      suspended: !accountMayUseApi(row.status),
      lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
    };
  });
}

/** Whether the API accepts an account's keys at all: the dashboard tells the owner when it does not. */
export function accountMayUseApi(status: string): boolean {
  return status !== 'suspended';
}

/** Why a key may not make a request needing `scope`, or null if it may. */
function keyRefusal(entry: Pick<KeyEntry, 'revoked' | 'suspended' | 'scopes'> | undefined, scope: Scope | undefined): AppError | null {
  if (!entry) return new AppError('invalid_api_key');
  if (entry.revoked) return new AppError('api_key_revoked');
  if (entry.suspended) return new AppError('account_suspended');
  if (scope && !entry.scopes.has(scope)) return new AppError('insufficient_permissions', `This API key lacks the ${scope} scope.`);
  return null;
}

/** Why the account may not send from `from`, or null if it may. */
function senderRefusal(from: string, row: SenderAccessRow | null | undefined): AppError | null {
  if (!row) {
    return new AppError(
      'invalid_sender_id',
      numberKeyOfSender(from) === null
        ? `The Sender ID ${JSON.stringify(from)} is not registered on this account.`
        : `${JSON.stringify(from)} is neither a number assigned to this account nor one of its Sender IDs.`,
    );
  }
  if (row.status !== 'approved') return new AppError('invalid_sender_id', `The Sender ID ${row.name} is ${row.status}; only approved Sender IDs can send.`);
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

async function authenticateDigest(ctx: Context, digest: string, options: AuthenticateOptions): Promise<Principal> {
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
    recordKeyUse(ctx.store.db, entry.keyId, now).catch((err: unknown) => ctx.log.warn({ err }, 'could not record key use'));
  }
  return { accountId: entry.accountId, keyId: entry.keyId, scopes: entry.scopes, access: snapshot, digest, scope: options.scope };
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
  return authenticateDigest(ctx, digestKey(key), options);
}

/**
 * For a request authenticated to check access at commit, when it ends without a commit (an
 * idempotent replay, an error): decides its key's access again on the current access revision,
 * and throws the refusal if there is one. Nothing to do when the revision was read for it.
 */
export async function confirmAccess(ctx: Context, principal: Principal): Promise<void> {
  if (principal.access.checked) return;
  await authenticateDigest(ctx, principal.digest, principal.scope ? { scope: principal.scope } : {});
}

/**
 * Refuses a send for an account that may not use the API (suspended, or gone), decided on
 * `snapshot` like a key: what a sender authenticated by something other than a key (an SMPP bind)
 * checks in its place.
 */
export async function checkAccountAccess(ctx: Context, accountId: string, snapshot: AccessSnapshot): Promise<AccessSnapshot> {
  const { snapshot: decided } = await decideAccess<true>(ctx.store, snapshot, async (s) => {
    const status = await s.get('account', accountId, async () => (await accountStatuses(ctx.store.db, [accountId])).get(accountId) ?? null);
    return status === null || !accountMayUseApi(status) ? { refusal: new AppError('account_suspended') } : { value: true };
  });
  return decided;
}

/** An assigned number counts as an approved sender, spelled as assigned. */
function numberAccess(row: { number: string } | undefined): SenderAccessRow | undefined {
  return row && { name: row.number, status: 'approved' };
}

/**
 * What `from` names for this account: one of its numbers (E.164 or short code, DECISIONS.md §8),
 * else its Sender ID of that name (case-insensitive). Read on the read connection (prepared).
 */
async function senderAccess(ctx: Context, accountId: string, from: string): Promise<SenderAccessRow | undefined> {
  const number = numberKeyOfSender(from);
  if (number !== null) {
    const owned = numberAccess(await ownedNumber(ctx.store, accountId, number));
    if (owned) return owned;
  }
  return senderAccessByKey(ctx.store, accountId, senderNameKey(from));
}

/** The same, read in the caller's transaction. */
async function senderAccessNow(db: Executor, accountId: string, from: string): Promise<SenderAccessRow | undefined> {
  const number = numberKeyOfSender(from);
  if (number !== null) {
    const owned = numberAccess(await ownedNumberInTransaction(db, accountId, number));
    if (owned) return owned;
  }
  return senderAccessInTransaction(db, accountId, senderNameKey(from));
}

/**
 * The sender an account may send from: an assigned number, or an approved Sender ID matched
 * case-insensitively; otherwise an error. Answers are cached per access revision
 * (access-cache.ts): registering, reviewing or removing a Sender ID, assigning or releasing a
 * number, moves the revision, so a decision applies to the next send. `access` is the snapshot
 * the request was authenticated with, when there is one: one request, one view of access.
 */
export async function approvedSenderName(ctx: Context, accountId: string, from: string, access?: AccessSnapshot): Promise<string> {
  const number = numberKeyOfSender(from);
  const cacheKey = `${accountId}\u0000${number === null ? senderNameKey(from) : `#${number}\u0000${senderNameKey(from)}`}`;
  const { value } = await decideAccess<string>(ctx.store, access ?? (await accessSnapshot(ctx.store)), async (s) => {
    const row = await s.get('sender', cacheKey, async () => (await senderAccess(ctx, accountId, from)) ?? null);
    const refusal = senderRefusal(from, row);
    return refusal ? { refusal } : { value: row!.name };
  });
  return value;
}

/**
 * Why a send granted under an older access revision may no longer commit (its key revoked or
 * stripped of `sms:send`, its account suspended, its Sender ID withdrawn or its number released),
 * read from the database in the caller's transaction; null if it still may. A grant without a key
 * (a submit over SMPP: the bind is the credential, and ends when its user goes) checks the account.
 */
export async function grantRefusalNow(db: Executor, accountId: string, grant: { keyId?: string; from: string }): Promise<AppError | null> {
  let refused: AppError | null;
  if (grant.keyId === undefined) {
    const status = (await accountStatuses(db, [accountId])).get(accountId);
    refused = status === undefined || !accountMayUseApi(status) ? new AppError('account_suspended') : null;
  } else {
    const key = await keyAccessById(db, grant.keyId);
    refused = keyRefusal(
      key && { revoked: key.revoked_at !== null, suspended: !accountMayUseApi(key.status), scopes: new Set(key.scopes.split(',')) },
      'sms:send',
    );
  }
  return refused ?? senderRefusal(grant.from, await senderAccessNow(db, accountId, grant.from));
}

/**
 * An account's opt-out list is kept whole in the access cache while it has at most this many
 * entries (one query per account and access revision, then none per send); a longer list is asked
 * about the recipients of each send.
 */
const OPT_OUTS_CACHED = 200;

type OptOutEntry = { complete: true; phones: ReadonlySet<string> } | { complete: false };

async function optedOutFrom(ctx: Context, snapshot: AccessSnapshot, accountId: string, phones: readonly string[]): Promise<Set<string>> {
  const entry = await snapshot.get<OptOutEntry>('opt-outs', accountId, async () => {
    const list = await optedOutPhones(ctx.store.db, accountId, OPT_OUTS_CACHED + 1);
    return list.length > OPT_OUTS_CACHED ? { complete: false } : { complete: true, phones: new Set(list) };
  });
  if (!entry.complete) return optedOutAmong(ctx.store.db, accountId, phones);
  return new Set(phones.filter((p) => entry.phones.has(p)));
}

/**
 * Which of `phones` (E.164) opted out of the account, read with the rest of the access check:
 * from the access cache, trusted while the access revision stands still (an opt-out or opt-in
 * moves it). A refusal found in a snapshot not read for this request is confirmed on the current
 * revision, so a START taken elsewhere is never refused from an old entry.
 */
export async function optedOutRecipients(ctx: Context, accountId: string, phones: readonly string[], access?: AccessSnapshot): Promise<Set<string>> {
  const snapshot = access ?? (await accessSnapshot(ctx.store));
  let found = await optedOutFrom(ctx, snapshot, accountId, phones);
  if (found.size > 0 && !snapshot.checked) {
    const current = await accessSnapshot(ctx.store);
    if (current.revision !== snapshot.revision) found = await optedOutFrom(ctx, current, accountId, phones);
  }
  return found;
}

/** Whether a single send's recipient has opted out since it was checked, read in the sending transaction. */
export async function optOutRefusalNow(db: Executor, accountId: string, phone: string): Promise<AppError | null> {
  return (await optedOutAmong(db, accountId, [phone])).size > 0 ? new AppError('recipient_opted_out', `${phone} opted out of messages from this account.`) : null;
}
