/**
 * The live binds of this process as rows every process can read (the CLI's `smpp-user list`, the
 * dashboard), and the state of the users they belong to, compared by the listener to end binds
 * whose credentials are gone.
 */
import { deleteSmppBind, insertSmppBind, smppUserStates, touchSmppBinds, type SmppBindRow } from '../../store/repositories/smpp-users.repository.ts';
import type { Context } from '../context.ts';

export type BindRecord = Omit<SmppBindRow, 'seen_at' | 'submits'>;

export async function recordSmppBind(ctx: Context, bind: BindRecord): Promise<void> {
  await insertSmppBind(ctx.store.db, { ...bind, submits: 0, seen_at: ctx.clock() });
}

export async function forgetSmppBind(ctx: Context, id: string): Promise<void> {
  await deleteSmppBind(ctx.store.db, id);
}

export async function refreshSmppBinds(ctx: Context, binds: readonly { id: string; submits?: number }[]): Promise<void> {
  await touchSmppBinds(ctx.store.db, binds, ctx.clock());
}

/** The password hash and account status of those of `systemIds` that still exist. */
export function smppUsersNow(ctx: Context, systemIds: readonly string[]): Promise<Map<string, { password_hash: string; account_status: string }>> {
  return smppUserStates(ctx.store.db, systemIds);
}
