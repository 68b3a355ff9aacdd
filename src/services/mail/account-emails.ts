/**
 * Who hears about an account by mail. Apart from the owners' service, which sends mail itself
 * (sign-up, links), so that the mail outbox reads addresses without importing it.
 */
import { findAccountEmail } from '../../store/repositories/accounts.repository.ts';
import { ownerEmailsOfAccount } from '../../store/repositories/owners.repository.ts';
import type { Context } from '../context.ts';

/** The addresses to notify about an account: its owners', or the account's contact address. */
export async function accountEmails(ctx: Context, accountId: string): Promise<string[]> {
  const owners = await ownerEmailsOfAccount(ctx.store.db, accountId);
  if (owners.length > 0) return owners;
  const email = await findAccountEmail(ctx.store.db, accountId);
  return email === undefined ? [] : [email];
}
