/**
 * `Idempotency-Key` on send and bulk (DECISIONS.md §5): the first request with a key runs, and
 * its result (status and body) is kept for 24 hours; a repeat with the same request gets that
 * result again without sending, the same key with another request is refused, and a repeat
 * while the first still runs gets 409. The HTTP layer (src/http/idempotency.ts) turns a result
 * into a reply, and says what an error answer looks like: nothing here knows HTTP.
 *
 * A successful send records its response in the same transaction as the messages and the debit
 * (see `finish` passed to the use-case), so a crash can never leave messages sent but the key
 * free to send them again.
 *
 * The record of a key is bounded: the request's fields are capped (src/http/schemas.ts, and an
 * over-long bulk `to` is echoed cut short), and a response of 1 KiB or more is stored compressed
 * (a 10,000-message bulk answer of about 1.1 MB keeps about 200 KB as base64). Replays decompress
 * and parse it back to the same value, which the route serialises exactly as the first time.
 * Expired keys are deleted by src/workers/idempotency-sweeper.ts.
 */
import { createHash } from 'node:crypto';
import { brotliCompressSync, brotliDecompressSync, constants as zlib } from 'node:zlib';
import { AppError } from '../../errors/catalogue.ts';
import type { Executor } from '../../store/connect.ts';
import {
  deleteExpiredIdempotencyKey,
  finishIdempotencyKey,
  finishIdempotencyKeys,
  idempotencyKeyRow,
  insertIdempotencyKey,
  releaseIdempotencyKey,
  takeOverIdempotencyKey,
} from '../../store/repositories/idempotency.repository.ts';
import type { Context } from '../context.ts';
import { isUniqueViolation } from '../../store/dialect.ts';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** How long a started request holds its key before another may take over (its holder died). */
const IN_PROGRESS_LOCK_MS = 60_000;

/** The result kept for a key: the status and the body of the first request's answer. */
export interface StoredResponse {
  status: number;
  body: unknown;
}

export interface Finish {
  (trx: Executor, response: StoredResponse): Promise<void>;
  /** The key it records the response under: `finishAll` writes many of them in one statement. */
  readonly record: { accountId: string; key: string };
}

/** Records the responses of several keys in the caller's transaction, in one statement where the database allows. */
export async function finishAll(trx: Executor, items: { finish: Finish; response: StoredResponse }[]): Promise<void> {
  await finishIdempotencyKeys(
    trx,
    items.map(({ finish, response }) => ({ ...finish.record, status: response.status, body: encodeResponseBody(response.body) })),
  );
}

/** Smaller bodies (every single send's) are stored as their JSON: compressing them gains nothing. */
const COMPRESS_FROM_CHARS = 1024;
/** Marks a compressed body: base64 of Brotli, in the same text column as plain JSON (never starts with `b`). */
const BROTLI = 'br:';

/** The stored form of a response body. */
export function encodeResponseBody(body: unknown): string {
  const json = JSON.stringify(body);
  if (json.length < COMPRESS_FROM_CHARS) return json;
  // It runs inside the send's transaction: quality 3 packs a 10,000-message answer (1.1 MB) to
  // about 150 KB in some 10 ms, where 5 gains 10% more for eight times the time.
  const packed = brotliCompressSync(json, {
    params: { [zlib.BROTLI_PARAM_QUALITY]: 3, [zlib.BROTLI_PARAM_MODE]: zlib.BROTLI_MODE_TEXT, [zlib.BROTLI_PARAM_SIZE_HINT]: json.length },
  });
  return BROTLI + packed.toString('base64');
}

export function decodeResponseBody(stored: string | null): unknown {
  if (stored === null) return null;
  const json = stored.startsWith(BROTLI) ? brotliDecompressSync(Buffer.from(stored.slice(BROTLI.length), 'base64')).toString('utf8') : stored;
  return JSON.parse(json);
}

export function requestHash(method: string, path: string, body: unknown): string {
  return createHash('sha256').update(`${method} ${path}\n${JSON.stringify(body)}`).digest('hex');
}

async function claimKey(ctx: Context, accountId: string, key: string, hash: string): Promise<StoredResponse | null> {
  const db = ctx.store.db;
  for (let attempt = 0; attempt < 3; attempt++) {
    const now = ctx.clock();
    try {
      await insertIdempotencyKey(db, {
        account_id: accountId,
        key,
        request_hash: hash,
        state: 'in_progress',
        response_status: null,
        response_body: null,
        locked_until: now + IN_PROGRESS_LOCK_MS,
        expires_at: now + IDEMPOTENCY_TTL_MS,
        created_at: now,
      });
      return null;
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
    }
    const row = await idempotencyKeyRow(db, accountId, key);
    if (!row) continue; // expired and removed meanwhile: try the insert again
    if (Number(row.expires_at) <= now) {
      await deleteExpiredIdempotencyKey(db, accountId, key, row.expires_at);
      continue;
    }
    if (row.request_hash !== hash) throw new AppError('idempotency_key_reused');
    if (row.state === 'done') return { status: Number(row.response_status), body: decodeResponseBody(row.response_body) };
    if (Number(row.locked_until) > now) throw new AppError('idempotency_in_progress');
    // The first request's process died before finishing: take the key over.
    if (await takeOverIdempotencyKey(db, accountId, key, row.locked_until, now + IN_PROGRESS_LOCK_MS)) return null;
  }
  throw new AppError('idempotency_in_progress');
}

/**
 * Runs `run` at most once per key. `run` receives a `finish` callback that it must call inside
 * its own transaction with the success result; an AppError it throws is stored as the result
 * `refused(err)` gives, unless it is retryable (rate limit, in progress), in which case the key
 * is released. A key still held by a running request is refused with `idempotency_in_progress`.
 */
export async function withIdempotency(
  ctx: Context,
  accountId: string,
  key: string | undefined,
  /** Computed only when a key is given: hashing every body would tax requests that send none. */
  hash: () => string,
  run: (finish: Finish | undefined) => Promise<StoredResponse>,
  /** The answer to keep for a client error of `run`, as the caller's interface gives it. */
  refused: (err: AppError) => StoredResponse,
): Promise<StoredResponse & { replayed: boolean }> {
  if (key === undefined) return { ...(await run(undefined)), replayed: false };
  // The route's schema refuses such a key first; this guards the other callers.
  if (key.length === 0 || key.length > 255) {
    throw new AppError('invalid_request', 'The Idempotency-Key header must be 1 to 255 characters.', {
      details: [{ field: 'Idempotency-Key', code: 'invalid_request', message: 'must be 1 to 255 characters' }],
    });
  }
  const stored = await claimKey(ctx, accountId, key, hash());
  if (stored) return { ...stored, replayed: true };
  const finish: Finish = Object.assign((trx: Executor, response: StoredResponse) => finishIdempotencyKey(trx, accountId, key, response.status, encodeResponseBody(response.body)), {
    record: { accountId, key },
  });
  const release = () => releaseIdempotencyKey(ctx.store.db, accountId, key);
  try {
    return { ...(await run(finish)), replayed: false };
  } catch (err) {
    if (err instanceof AppError && !err.status.toString().startsWith('5') && err.code !== 'rate_limit_exceeded' && err.code !== 'idempotency_in_progress') {
      // A client error is the answer to this request: a retry with the same key gets it again.
      const result = refused(err);
      await ctx.store.db.transaction().execute((trx) => finish(trx, result));
    } else {
      await release().catch(() => {});
    }
    throw err;
  }
}
