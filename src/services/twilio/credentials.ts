/**
 * The Twilio-compatible API's credentials (DECISIONS.md §12): per account an Account SID (`AC`
 * and 32 hex digits, never changed) and an Auth Token (32 hex digits), made when first asked for.
 * The token is shown in full only when made or rotated; after a rotation the previous one keeps
 * working for 24 hours. Pigeon keeps the token in clear, beside the webhook signing secret, because
 * it is the HMAC key of `X-Twilio-Signature`; Basic auth compares digests, so no comparison of the
 * secret itself depends on where it first differs.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isAccountSid, isAuthToken, maskAuthToken } from '../../domain/twilio-sid.ts';
import { AppError } from '../../errors/catalogue.ts';
import { accountByTwilioSid, replaceTwilioToken, setFirstTwilioCredentials, twilioCredentialsOf, type TwilioCredentialsRow } from '../../store/repositories/accounts.repository.ts';
import { accountMayUseApi, authenticate } from '../auth/access.ts';
import type { Scope } from '../keys/api-keys.ts';
import type { Sender } from '../messages/submit-messages.ts';
import { recordAudit } from '../audit/audit.ts';
import type { Context } from '../context.ts';

export const TWILIO_TOKEN_OVERLAP_MS = 24 * 60 * 60 * 1000;

export interface TwilioCredentials {
  account_sid: string;
  /** In full when `revealed`, else masked to its last four digits. */
  auth_token: string;
  revealed: boolean;
  /** Until when the token before the last rotation keeps working, if it still does. */
  previous_valid_until: number | null;
}

function view(row: TwilioCredentialsRow, revealed: boolean, now: number): TwilioCredentials {
  const rotatedAt = row.twilio_token_rotated_at == null ? null : Number(row.twilio_token_rotated_at);
  const until = rotatedAt !== null && row.twilio_token_previous ? rotatedAt + TWILIO_TOKEN_OVERLAP_MS : null;
  return {
    account_sid: row.twilio_sid!,
    auth_token: revealed ? row.twilio_token! : maskAuthToken(row.twilio_token!),
    revealed,
    previous_valid_until: until !== null && until > now ? until : null,
  };
}

const hex32 = () => randomBytes(16).toString('hex');

/**
 * The account's credentials, made on the first call (the token then shown in full); `rotate`
 * gives a new token, shown in full, and keeps the previous one working for 24 hours.
 */
export async function twilioCredentials(ctx: Context, accountId: string, options: { rotate?: boolean } = {}): Promise<TwilioCredentials> {
  const db = ctx.store.db;
  const now = ctx.clock();
  let row = await twilioCredentialsOf(db, accountId);
  if (!row) throw new AppError('not_found', `No account ${accountId}.`);
  if (!row.twilio_sid) {
    const made = await db.transaction().execute(async (trx) => {
      const first = await setFirstTwilioCredentials(trx, accountId, `AC${hex32()}`, hex32());
      if (first) await recordAudit(ctx, { action: 'twilio.credentials_rotated', accountId, target: { type: 'account', id: accountId }, changes: { twilio_token: [null, 'created'] } }, trx);
      return first;
    });
    row = (await twilioCredentialsOf(db, accountId))!;
    if (made) return view(row, true, now);
  }
  if (!options.rotate) return view(row, false, now);
  const previous = row.twilio_token!;
  await db.transaction().execute(async (trx) => {
    await replaceTwilioToken(trx, accountId, hex32(), previous, now);
    await recordAudit(ctx, { action: 'twilio.credentials_rotated', accountId, target: { type: 'account', id: accountId }, changes: { twilio_token: ['set', 'rotated'] } }, trx);
  });
  return view((await twilioCredentialsOf(db, accountId))!, true, now);
}

/** The SID alone, for pages that show it: null until the credentials were made. */
export async function twilioAccountSid(ctx: Context, accountId: string): Promise<TwilioCredentials | null> {
  const row = await twilioCredentialsOf(ctx.store.db, accountId);
  return row?.twilio_sid ? view(row, false, ctx.clock()) : null;
}

const digest = (value: string) => createHash('sha256').update(value).digest();

function tokenMatches(row: TwilioCredentialsRow, token: string, now: number): boolean {
  const given = digest(token);
  const candidates = [row.twilio_token];
  const rotatedAt = row.twilio_token_rotated_at == null ? null : Number(row.twilio_token_rotated_at);
  if (rotatedAt !== null && now - rotatedAt < TWILIO_TOKEN_OVERLAP_MS) candidates.push(row.twilio_token_previous);
  let match = false;
  for (const c of candidates) if (c && timingSafeEqual(digest(c), given)) match = true;
  return match;
}

/** Who calls the Twilio-compatible API: the account, its SID, and the sender for its sends. */
export interface TwilioCaller {
  accountId: string;
  accountSid: string;
  sender: Sender;
}

/**
 * HTTP Basic auth: the Account SID with its Auth Token (every scope), or with a Pigeon API key of
 * the same account (that key's scopes). Every failure to prove who is calling is the same
 * `invalid_api_key`, counted by the caller toward the address's failed authentications.
 */
export async function authenticateTwilio(ctx: Context, header: string | undefined, scope: Scope): Promise<TwilioCaller> {
  const match = header === undefined ? null : /^Basic ([A-Za-z0-9+/]{1,400}={0,2})$/i.exec(header);
  if (!match) throw new AppError('invalid_api_key');
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const sid = decoded.slice(0, colon);
  const password = decoded.slice(colon + 1);
  if (colon < 0 || !isAccountSid(sid)) throw new AppError('invalid_api_key');
  const row = await accountByTwilioSid(ctx.store.db, sid);
  if (!row) throw new AppError('invalid_api_key');
  if (isAuthToken(password)) {
    if (!tokenMatches(row, password, ctx.clock())) throw new AppError('invalid_api_key');
    if (!accountMayUseApi(row.status)) throw new AppError('account_suspended');
    return { accountId: row.id, accountSid: sid, sender: { accountId: row.id } };
  }
  const principal = await authenticate(ctx, `Bearer ${password}`, { scope });
  if (principal.accountId !== row.id) throw new AppError('invalid_api_key');
  return { accountId: row.id, accountSid: sid, sender: principal };
}
