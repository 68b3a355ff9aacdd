/**
 * A number's `sms_url` (DECISIONS.md §12): where messages to it are POSTed Twilio-style. Set when
 * the operator assigns the number (`pigeon number assign ... --sms-url URL`) or by the account's
 * owner on the dashboard; delivered like every webhook (https only, the address rules, retries).
 */
import { AppError } from '../../errors/catalogue.ts';
import { setNumberSmsUrl } from '../../store/repositories/numbers.repository.ts';
import { checkEventsUrl } from '../accounts/events-url.ts';
import { recordAudit } from '../audit/audit.ts';
import type { Context } from '../context.ts';
import { twilioCredentials } from './credentials.ts';

/** An absolute https:// URL of at most 2,048 characters without credentials, or `invalid_events_url`. */
export function checkSmsUrl(url: string): string {
  try {
    return checkEventsUrl(url);
  } catch (error) {
    if (error instanceof AppError) throw new AppError('invalid_events_url', error.message.replace('The events URL', 'The SMS URL'));
    throw error;
  }
}

/**
 * The posts to an SMS URL are signed with the account's Auth Token and name its SID: an account
 * that has none yet gets them now (its owner sees the token by rotating it).
 */
export async function ensureSigningToken(ctx: Context, accountId: string): Promise<void> {
  await twilioCredentials(ctx, accountId);
}

/** Sets (or with null clears) the SMS URL of a number the account holds; `not_found` otherwise. */
export async function setSmsUrl(ctx: Context, accountId: string, number: string, url: string | null): Promise<string | null> {
  const value = url === null || url === '' ? null : checkSmsUrl(url);
  await ctx.store.db.transaction().execute(async (trx) => {
    if (!(await setNumberSmsUrl(trx, accountId, number, value))) throw new AppError('not_found', `${number} is not a number of this account.`);
    await recordAudit(ctx, { action: 'number.sms_url_changed', accountId, target: { type: 'number', id: number }, changes: { sms_url: [null, value] } }, trx);
  });
  if (value !== null) await ensureSigningToken(ctx, accountId);
  return value;
}
