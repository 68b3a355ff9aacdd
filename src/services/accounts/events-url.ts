/**
 * The account events URL (DECISIONS.md §8): where the events that belong to no send request go
 * (`sms.received`, `recipient.opted_out`, `recipient.opted_in`). Set through
 * `PUT /v1/account/events-url`, the dashboard's webhook settings or `pigeon account events-url`;
 * delivered, signed and retried like delivery events.
 */
import { AppError } from '../../errors/catalogue.ts';
import { findAccount, setAccountEventsUrl } from '../../store/repositories/accounts.repository.ts';
import { recordAudit } from '../audit/audit.ts';
import type { Context } from '../context.ts';

export const MAX_EVENTS_URL = 2048;

/** The URL when it is an absolute https:// URL without credentials, else `invalid_events_url`. */
export function checkEventsUrl(url: string): string {
  if (url.length > MAX_EVENTS_URL) throw new AppError('invalid_events_url', `The URL is longer than ${MAX_EVENTS_URL.toLocaleString('en')} characters.`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new AppError('invalid_events_url', 'The events URL is not an absolute URL.');
  }
  if (parsed.protocol !== 'https:') throw new AppError('invalid_events_url', 'The events URL must use https://.');
  if (parsed.username || parsed.password) throw new AppError('invalid_events_url', 'The events URL must not carry credentials.');
  return url;
}

/** Sets the account's events URL (null clears it); `not_found` for an unknown account. */
export async function setEventsUrl(ctx: Context, accountId: string, url: string | null): Promise<string | null> {
  const value = url === null ? null : checkEventsUrl(url);
  await ctx.store.db.transaction().execute(async (trx) => {
    const before = await findAccount(trx, accountId);
    if (!before || !(await setAccountEventsUrl(trx, accountId, value))) throw new AppError('not_found', `No account ${accountId}.`);
    if (before.events_url !== value) {
      const action = value === null ? 'account.events_url_removed' : 'account.events_url_set';
      await recordAudit(ctx, { action, accountId, target: { type: 'account', id: accountId }, changes: { events_url: [before.events_url, value] } }, trx);
    }
  });
  return value;
}
