/**
 * Lockout after repeated failed logins, counted in the database (so that every process of an
 * installation counts together), on two keys:
 * - the e-mail and client address together: five failures within fifteen minutes lock that pair
 *   out for fifteen minutes, and each further lockout in a row lasts twice as long (up to a day);
 *   a successful login clears it;
 * - the client address alone, across e-mails: twenty failures within fifteen minutes lock the
 *   address out the same way, so that one client cannot try passwords on many accounts (nor make
 *   the server compute a password hash per try) by changing the e-mail.
 */
import { AppError } from '../errors/catalogue.ts';
import type { Context } from './context.ts';

export const MAX_LOGIN_FAILURES = 5;
export const MAX_ADDRESS_FAILURES = 20;
export const LOGIN_WINDOW_MS = 15 * 60 * 1000;
export const LOCKOUT_MS = 15 * 60 * 1000;
export const MAX_LOCKOUT_MS = 24 * 60 * 60 * 1000;

function pairKey(scope: string, email: string, ip: string): string {
  return `${scope}|${email.trim().toLowerCase()}|${ip}`;
}

function addressKey(scope: string, ip: string): string {
  return `${scope}|*|${ip}`;
}

/** Throws `login_locked` while the pair, or the client address, is locked out. */
export async function assertNotLocked(ctx: Context, scope: string, email: string, ip: string): Promise<void> {
  const rows = await ctx.store.db
    .selectFrom('login_throttle')
    .select('locked_until')
    .where('key', 'in', [pairKey(scope, email, ip), addressKey(scope, ip)])
    .execute();
  const now = ctx.clock();
  const until = Math.max(0, ...rows.map((r) => (r.locked_until == null ? 0 : Number(r.locked_until))));
  if (until > now) {
    const seconds = Math.ceil((until - now) / 1000);
    throw new AppError('login_locked', `Too many failed logins; try again in ${Math.ceil(seconds / 60)} minutes.`, { headers: { 'retry-after': String(seconds) } });
  }
}

async function countFailure(ctx: Context, key: string, max: number, now: number): Promise<void> {
  await ctx.store.db.transaction().execute(async (trx) => {
    const row = await trx.selectFrom('login_throttle').selectAll().where('key', '=', key).executeTakeFirst();
    const fresh = !row || now - Number(row.window_started_at) > LOGIN_WINDOW_MS;
    const failures = fresh ? 1 : row.failures + 1;
    const lockouts = row?.lockouts ?? 0;
    const locks = failures >= max;
    const next = {
      failures: locks ? 0 : failures,
      window_started_at: fresh ? now : Number(row.window_started_at),
      locked_until: locks ? now + Math.min(MAX_LOCKOUT_MS, LOCKOUT_MS * 2 ** lockouts) : row?.locked_until ?? null,
      lockouts: locks ? lockouts + 1 : lockouts,
    };
    if (row) await trx.updateTable('login_throttle').set(next).where('key', '=', key).execute();
    else await trx.insertInto('login_throttle').values({ key, ...next }).execute();
  });
}

export async function recordLoginFailure(ctx: Context, scope: string, email: string, ip: string): Promise<void> {
  const now = ctx.clock();
  await countFailure(ctx, pairKey(scope, email, ip), MAX_LOGIN_FAILURES, now);
  await countFailure(ctx, addressKey(scope, ip), MAX_ADDRESS_FAILURES, now);
}

/** A successful login clears the pair's count and its backoff (the address keeps its count). */
export async function clearLoginFailures(ctx: Context, scope: string, email: string, ip: string): Promise<void> {
  await ctx.store.db.deleteFrom('login_throttle').where('key', '=', pairKey(scope, email, ip)).execute();
}
