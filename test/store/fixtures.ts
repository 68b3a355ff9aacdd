/** Rows the store suites need before the ones they test. */
import type { Store } from '../../src/store/connect.ts';

export async function insertAccount(store: Store, id: string, status: 'active' | 'suspended' = 'active'): Promise<void> {
  await store.db
    .insertInto('accounts')
    .values({
      id,
      name: `Account ${id}`,
      email: `${id}@example.com`,
      status,
      credits: 0,
      webhook_secret: 'whsec_test',
      webhook_secret_previous: null,
      webhook_secret_rotated_at: null,
      created_at: 1,
      origin: 'operator',
      pending_sender_id_limit: null,
      document_quota_bytes: null,
      daily_message_limit: null,
      daily_count: 0,
      daily_day: 0,
      allowed_countries: null,
    })
    .execute();
}
