import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inboundById, inboundPage, insertInbound, unroutedInbound, type InboundRow } from '../../src/store/repositories/inbound-messages.repository.ts';
import { insertNumber, numberHolder } from '../../src/store/repositories/numbers.repository.ts';
import { findAccount, setAccountEventsUrl, setAccountHelpText } from '../../src/store/repositories/accounts.repository.ts';
import { webhookEventsPage } from '../../src/store/repositories/webhook-events.repository.ts';
import { insertRows } from '../../src/store/insert-rows.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { insertAccount } from './fixtures.ts';

function inbound(id: string, accountId: string | null, sender: string, recipient: string, at: number, over: Partial<InboundRow> = {}): InboundRow {
  return { id, account_id: accountId, sender, recipient, body: `body ${id}`, encoding: 'GSM-7', segments: 1, incomplete: 0, received_at: at, ...over };
}

forEachDialect((_dialect, open) => {
  test('inbound messages: a page of an account’s, filtered, newest first, with the count; unrouted apart', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertAccount(store, 'acc_b');
    await insertInbound(store.db, inbound('in_1', 'acc_a', '+447911000001', '+447700900001', 10));
    await insertInbound(store.db, inbound('in_2', 'acc_a', '+447911000002', '+447700900001', 20, { incomplete: 1, body: 'Ünïcödé ✓', encoding: 'UCS-2' }));
    await insertInbound(store.db, inbound('in_3', 'acc_a', '+447911000001', '60606', 20));
    await insertInbound(store.db, inbound('in_4', 'acc_b', '+447911000001', '+447700900002', 30));
    await insertInbound(store.db, inbound('in_5', null, '+447911000001', '+447700900009', 40));
    const ids = (r: { rows: InboundRow[] }) => r.rows.map((x) => x.id);
    assert.deepEqual(ids(await inboundPage(store.db, { accountId: 'acc_a' }, 10, 0)), ['in_3', 'in_2', 'in_1']);
    assert.equal((await inboundPage(store.db, { accountId: 'acc_a' }, 1, 1)).total, 3);
    assert.deepEqual(ids(await inboundPage(store.db, { accountId: 'acc_a' }, 1, 1)), ['in_2']);
    assert.deepEqual(ids(await inboundPage(store.db, { accountId: 'acc_a', from: '+447911000001' }, 10, 0)), ['in_3', 'in_1']);
    assert.deepEqual(ids(await inboundPage(store.db, { accountId: 'acc_a', to: '+447700900001' }, 10, 0)), ['in_2', 'in_1']);
    assert.deepEqual(ids(await inboundPage(store.db, { accountId: 'acc_a', since: 20, until: 20 }, 10, 0)), ['in_3', 'in_2']);
    assert.deepEqual((await unroutedInbound(store.db, 10)).map((r) => r.id), ['in_5']);
    const two = await inboundById(store.db, 'in_2');
    assert.equal(two?.body, 'Ünïcödé ✓');
    assert.equal(Number(two?.incomplete), 1);
  });

  test('the holder of a number carries the account’s events URL and help text', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertNumber(store.db, { number: '+447700900001', account_id: 'acc_a', label: null, created_at: 1 });
    assert.equal(await setAccountEventsUrl(store.db, 'acc_a', 'https://127.0.0.1/events'), true);
    assert.equal(await setAccountHelpText(store.db, 'acc_a', 'Call us.'), true);
    assert.equal(await setAccountEventsUrl(store.db, 'acc_none', null), false);
    const holder = await numberHolder(store.db, '+447700900001');
    assert.deepEqual({ ...holder }, { number: '+447700900001', account_id: 'acc_a', name: 'Account acc_a', status: 'active', events_url: 'https://127.0.0.1/events', help_text: 'Call us.', sms_url: null, twilio_sid: null });
    assert.equal(await numberHolder(store.db, '+447700900002'), undefined);
    await setAccountEventsUrl(store.db, 'acc_a', null);
    assert.equal((await findAccount(store.db, 'acc_a'))?.events_url, null);
  });

  test('an account event has no message and names its inbound message', async () => {
    const store = await open();
    await insertAccount(store, 'acc_a');
    await insertRows(store.db, 'webhook_events', [
      { id: 'evt_1', account_id: 'acc_a', message_id: null, inbound_id: 'in_1', batch_id: null, event: 'sms.received', url: 'https://127.0.0.1/e', payload: '{}', status: 'pending', attempts: 0, last_error: null, created_at: 1, updated_at: 1 },
    ]);
    const { rows } = await webhookEventsPage(store.db, { accountId: 'acc_a' }, 10, 0);
    assert.equal(rows[0]?.message_id, null);
    assert.equal(rows[0]?.inbound_id, 'in_1');
  });
});
