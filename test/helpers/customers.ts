/**
 * A customer ready to send, made through the services as the operator would make it: an account
 * with credits, an API key and an approved Sender ID. For the in-process harness and for tests
 * that drive `pigeon` processes over a store of their own.
 */
import { createAccount } from '../../src/services/accounts/accounts.ts';
import type { Context } from '../../src/services/context.ts';
import { createApiKey } from '../../src/services/keys/api-keys.ts';
import { approveSenderId, registerSenderId } from '../../src/services/sender-ids/sender-ids.ts';

export interface CustomerOptions {
  name: string;
  email: string;
  credits: number;
  /** The key's label (default `test`). */
  label?: string;
  /** The key's scopes, comma-separated (default all). */
  scopes?: string;
  /** The approved Sender ID (default `Acme`); null for none. */
  sender?: string | null;
}

export async function createCustomer(ctx: Context, opts: CustomerOptions): Promise<{ accountId: string; key: string; keyId: string }> {
  const account = await createAccount(ctx, { name: opts.name, email: opts.email, credits: opts.credits });
  const key = await createApiKey(ctx, account.id, { label: opts.label ?? 'test', scopes: opts.scopes });
  if (opts.sender !== null) await approveSenderId(ctx, (await registerSenderId(ctx, account.id, opts.sender ?? 'Acme')).id);
  return { accountId: account.id, key: key.key, keyId: key.id };
}
