import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CampaignsTable, MessagesTable } from '../../src/store/database.ts';
import {
  campaignBatchIds,
  campaignById,
  campaignByFormKey,
  campaignDefaults,
  saveCampaignDefaults,
  campaignDeliveries,
  campaignFailures,
  campaignResultsPage,
  campaignStatusCounts,
  insertCampaign,
  listCampaignRows,
  setOwnerTimeZone,
} from '../../src/store/repositories/campaigns.repository.ts';
import { insertBatches, insertMessages } from '../../src/store/repositories/messages.repository.ts';
import { findOwnerById } from '../../src/store/repositories/owners.repository.ts';
import { isUniqueViolation } from '../../src/store/dialect.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { openTestStore } from '../helpers/test-store.ts';
import { migrateToLatest } from '../../src/store/migrate.ts';
import { sql } from 'kysely';
import { addOwner, insertAccount } from './fixtures.ts';

function campaign(id: string, accountId: string, formKey: string, createdAt: number): CampaignsTable {
  return { id, account_id: accountId, form_key: formKey, sender: 'Acme', template: 'Hi {{name}}', file_rows: 3, invalid_rows: 1, messages: 2, credits: 2, send_at: null, time_zone: null, created_at: createdAt, name: `Campaign ${id}`, duplicate_rows: 0, opt_out_line: 0 };
}

function message(id: string, accountId: string, batchId: string, over: Partial<MessagesTable> = {}): MessagesTable {
  return {
    id, account_id: accountId, batch_id: batchId, recipient: '+33612345678', sender: 'Acme', body: 'Hi', encoding: 'GSM-7', segments: 1, status: 'pending',
    callback_url: null, carrier_message_id: null, error_code: null, error_message: null, created_at: 1_000, sent_at: null, delivered_at: null, updated_at: 1_000,
    send_at: null, validity_period: null, expires_at: null, ...over,
  };
}

forEachDialect((dialect, open) => {
  test('migration 019: campaigns made before it have no name (shown by id), no repeats skipped, no opt-out line', async () => {
    const store = await openTestStore(dialect, { upTo: '017-dispatch-jobs-one-index' });
    try {
      await insertAccount(store, 'acc_a');
      await sql`insert into campaigns (id, account_id, form_key, sender, template, file_rows, invalid_rows, messages, credits, send_at, time_zone, created_at)
        values ('cmp_old', 'acc_a', 'key-aaaaaaaaaaaaaaaa', 'Acme', 'Hi', 3, 1, 2, 2, null, null, 10)`.execute(store.db);
      await migrateToLatest(store.db);
      const row = await campaignById(store.db, 'acc_a', 'cmp_old');
      assert.deepEqual([row?.name, Number(row?.duplicate_rows), Number(row?.opt_out_line), Number(row?.messages)], [null, 0, 0, 2]);
      assert.equal(await campaignDefaults(store.db, 'acc_a'), undefined);
    } finally {
      await store.close();
    }
  });

  test('a campaign keeps its name, its duplicate rows and whether the opt-out line was added', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertCampaign(store.db, { ...campaign('cmp_1', 'acc_a', 'key-aaaaaaaaaaaaaaaa', 10), name: 'customers.csv 2026-11-26', duplicate_rows: 2, opt_out_line: 1 });
    const row = await campaignById(store.db, 'acc_a', 'cmp_1');
    assert.deepEqual([row?.name, Number(row?.duplicate_rows), Number(row?.opt_out_line)], ['customers.csv 2026-11-26', 2, 1]);
  });

  test('the composer’s defaults are remembered per account, replaced by the next ones', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertAccount(store, 'acc_b');
    assert.equal(await campaignDefaults(store.db, 'acc_a'), undefined);
    await saveCampaignDefaults(store.db, 'acc_a', { country: 'GB', recipient_column: 'Mobile' }, 10);
    await saveCampaignDefaults(store.db, 'acc_b', { country: 'US', recipient_column: null }, 10);
    await saveCampaignDefaults(store.db, 'acc_a', { country: 'FR', recipient_column: 'Phone Number' }, 20);
    assert.deepEqual(await campaignDefaults(store.db, 'acc_a'), { country: 'FR', recipient_column: 'Phone Number' });
    await saveCampaignDefaults(store.db, 'acc_a', { country: 'GB' }, 30);
    assert.deepEqual(await campaignDefaults(store.db, 'acc_a'), { country: 'GB', recipient_column: 'Phone Number' }, 'no column given: the one remembered stays');
    assert.deepEqual(await campaignDefaults(store.db, 'acc_b'), { country: 'US', recipient_column: null });
  });

  test('a campaign is found by id and by form key, only in its account; a form key is unique per account', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertAccount(store, 'acc_b');
    await insertCampaign(store.db, campaign('cmp_1', 'acc_a', 'key-aaaaaaaaaaaaaaaa', 10));
    await insertCampaign(store.db, campaign('cmp_2', 'acc_a', 'key-bbbbbbbbbbbbbbbb', 20));
    await insertCampaign(store.db, campaign('cmp_3', 'acc_b', 'key-aaaaaaaaaaaaaaaa', 30));
    assert.equal((await campaignByFormKey(store.db, 'acc_a', 'key-aaaaaaaaaaaaaaaa'))?.id, 'cmp_1');
    assert.equal((await campaignByFormKey(store.db, 'acc_b', 'key-aaaaaaaaaaaaaaaa'))?.id, 'cmp_3');
    assert.equal(await campaignById(store.db, 'acc_b', 'cmp_1'), undefined);
    assert.equal((await campaignById(store.db, 'acc_a', 'cmp_2'))?.template, 'Hi {{name}}');
    assert.deepEqual((await listCampaignRows(store.db, 'acc_a', 10)).map((c) => c.id), ['cmp_2', 'cmp_1']);
    await assert.rejects(insertCampaign(store.db, campaign('cmp_4', 'acc_a', 'key-aaaaaaaaaaaaaaaa', 40)), (err) => isUniqueViolation(err));
  });

  test('counts by status, failures by code, deliveries per minute and results pages cover the campaign’s batches only', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertCampaign(store.db, campaign('cmp_1', 'acc_a', 'key-aaaaaaaaaaaaaaaa', 10));
    await insertBatches(store.db, [
      { id: 'bat_1', account_id: 'acc_a', total: 3, queued: 3, credits_used: 3, created_at: 10, campaign_id: 'cmp_1' },
      { id: 'bat_2', account_id: 'acc_a', total: 2, queued: 2, credits_used: 2, created_at: 10, campaign_id: 'cmp_1' },
      { id: 'bat_3', account_id: 'acc_a', total: 1, queued: 1, credits_used: 1, created_at: 10, campaign_id: null },
    ]);
    await insertMessages(store.db, [
      message('msg_1', 'acc_a', 'bat_1', { status: 'delivered', delivered_at: 120_500 }),
      message('msg_2', 'acc_a', 'bat_1', { status: 'delivered', delivered_at: 121_000 }),
      message('msg_3', 'acc_a', 'bat_1', { status: 'failed', error_code: 'invalid_destination', error_message: 'no' }),
      message('msg_4', 'acc_a', 'bat_2', { status: 'delivered', delivered_at: 240_000 }),
      message('msg_5', 'acc_a', 'bat_2', { status: 'scheduled', send_at: 9_000 }),
      message('msg_6', 'acc_a', 'bat_3', { status: 'failed', error_code: 'other' }),
    ]);
    assert.deepEqual(await campaignBatchIds(store.db, 'acc_a', 'cmp_1'), ['bat_1', 'bat_2']);
    assert.deepEqual(await campaignBatchIds(store.db, 'acc_b', 'cmp_1'), []);
    assert.deepEqual(await campaignStatusCounts(store.db, 'acc_a', 'cmp_1'), { delivered: 3, failed: 1, scheduled: 1 });
    assert.deepEqual(await campaignStatusCounts(store.db, 'acc_b', 'cmp_1'), {});
    assert.deepEqual(await campaignFailures(store.db, 'acc_a', 'cmp_1'), [{ code: 'invalid_destination', count: 1 }]);
    assert.deepEqual(await campaignDeliveries(store.db, 'acc_a', 'cmp_1', 60_000), [
      { at: 120_000, count: 2 },
      { at: 240_000, count: 1 },
    ]);
    const first = await campaignResultsPage(store.db, 'acc_a', 'cmp_1', null, 3);
    assert.deepEqual(first.map((m) => m.id), ['msg_1', 'msg_2', 'msg_3']);
    const second = await campaignResultsPage(store.db, 'acc_a', 'cmp_1', 'msg_3', 3);
    assert.deepEqual(second.map((m) => m.id), ['msg_4', 'msg_5']);
    assert.equal(second[1]!.status, 'scheduled');
  });

  test('the owner’s time zone is stored', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await addOwner(store, 'own_1', 'acc_a');
    assert.equal((await findOwnerById(store.db, 'own_1'))?.time_zone, null);
    await setOwnerTimeZone(store.db, 'own_1', 'Europe/Paris');
    assert.equal((await findOwnerById(store.db, 'own_1'))?.time_zone, 'Europe/Paris');
  });
});
