/** Rows the store suites start from. */
import type { Store } from '../../src/store/connect.ts';
import type { AccountsTable, OwnersTable } from '../../src/store/database.ts';
import { insertAccount as insertAccountRow } from '../../src/store/repositories/accounts.repository.ts';
import { insertOwner } from '../../src/store/repositories/owners.repository.ts';

export function accountRow(id: string, over: Partial<AccountsTable> = {}): AccountsTable {
  return {
    id,
    name: `Account ${id}`,
    email: `${id}@example.com`,
    status: 'active',
    credits: 0,
    webhook_secret: `whsec_${id}`,
    webhook_secret_previous: null,
    webhook_secret_rotated_at: null,
    created_at: 1_000,
    origin: 'operator',
    pending_sender_id_limit: null,
    document_quota_bytes: null,
    daily_message_limit: null,
    daily_count: 0,
    daily_day: 0,
    allowed_countries: null,
    events_url: null,
    help_text: null,
    ...over,
  };
}

export async function addAccount(store: Store, id: string, over: Partial<AccountsTable> = {}): Promise<AccountsTable> {
  const row = accountRow(id, over);
  await insertAccountRow(store.db, row);
  return row;
}

export async function addOwner(store: Store, id: string, accountId: string, over: Partial<OwnersTable> = {}): Promise<OwnersTable> {
  const row: OwnersTable = { id, account_id: accountId, email: `${id}@example.com`, password_hash: 'scrypt$x', created_at: 1_000, email_verified_at: null, time_zone: null, role: 'owner', totp_secret: null, totp_enabled_at: null, totp_last_step: null, ...over };
  await insertOwner(store.db, row);
  return row;
}

/** An account with the given status and no credits, for suites that need only its id. */
export async function insertAccount(store: Store, id: string, status: 'active' | 'suspended' = 'active'): Promise<void> {
  await addAccount(store, id, { status, webhook_secret: 'whsec_test', created_at: 1 });
}
