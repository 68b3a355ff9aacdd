/**
 * Lockout after repeated failed logins, counted per e-mail and client address in the database
 * (so that every process of an installation counts together). Five failures within fifteen
 * minutes lock that pair out for fifteen minutes; a success clears the count.
 */
import { AppError } from '../errors/catalogue.ts';
import type { Context } from './context.ts';

export const MAX_LOGIN_FAILURES = 5;
export const LOGIN_WINDOW_MS = 15 * 60 * 1000;
export const LOCKOUT_MS = 15 * 60 * 1000;

function throttleKey(scope: string, email: string, ip: string): string {
  return `${scope}|${email.trim().toLowerCase()}|${ip}`;
}

/** Throws `login_locked` while the pair is locked out. */
export async function assertNotLocked(ctx: Context, scope: string, email: string, ip: string): Promise<void> {
  const row = await ctx.store.db.selectFrom('login_throttle').selectAll().where('key', '=', throttleKey(scope, email, ip)).executeTakeFirst();
  const now = ctx.clock();
  if (row?.locked_until != null && Number(row.locked_until) > now) {
    const seconds = Math.ceil((Number(row.locked_until) - now) / 1000);
    throw new AppError('login_locked', `Too many failed logins; try again in ${Math.ceil(seconds / 60)} minutes.`, { headers: { 'retry-after': String(seconds) } });
  }
}

export async function recordLoginFailure(ctx: Context, scope: string, email: string, ip: string): Promise<void> {
  const key = throttleKey(scope, email, ip);
  const now = ctx.clock();
  await ctx.store.db.transaction().execute(async (trx) => {
    const row = await trx.selectFrom('login_throttle').selectAll().where('key', '=', key).executeTakeFirst();
    const fresh = !row || now - Number(row.window_started_at) > LOGIN_WINDOW_MS;
    const failures = fresh ? 1 : row.failures + 1;
    const next = {
      failures: failures >= MAX_LOGIN_FAILURES ? 0 : failures,
      window_started_at: fresh ? now : Number(row.window_started_at),
      locked_until: failures >= MAX_LOGIN_FAILURES ? now + LOCKOUT_MS : null,
    };
    if (row) await trx.updateTable('login_throttle').set(next).where('key', '=', key).execute();
    else await trx.insertInto('login_throttle').values({ key, ...next }).execute();
  });
}

export async function clearLoginFailures(ctx: Context, scope: string, email: string, ip: string): Promise<void> {
  await ctx.store.db.deleteFrom('login_throttle').where('key', '=', throttleKey(scope, email, ip)).execute();
}
