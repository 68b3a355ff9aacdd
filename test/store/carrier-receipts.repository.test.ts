import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createAccount } from '../../src/services/accounts/accounts.ts';
import type { MessagesTable } from '../../src/store/database.ts';
import {
  carrierPartsByKeys,
  insertCarrierParts,
  messagesByCarrierIds,
  oldestDispatchClaim,
  routeIdSpellings,
  saveRouteIdSpelling,
} from '../../src/store/repositories/carrier-receipts.repository.ts';
import { claimJobs, enqueueJobs } from '../../src/store/repositories/jobs.repository.ts';
import { insertMessages } from '../../src/store/repositories/messages.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { serviceContext } from '../helpers/test-store.ts';

const NOW = 1_800_000_000_000;

function sentMessage(accountId: string, i: number, carrierId: string): MessagesTable {
  return {
    id: `msg_${i}`,
    account_id: accountId,
    batch_id: null,
    recipient: `+4915100000${100 + i}`,
    sender: 'ACME',
    body: 'hello',
    encoding: 'GSM-7',
    segments: 1,
    status: 'sent',
    callback_url: null,
    carrier_message_id: carrierId,
    error_code: null,
    error_message: null,
    created_at: NOW,
    sent_at: NOW,
    delivered_at: null,
    updated_at: NOW,
    send_at: null,
    validity_period: null,
    expires_at: null,
  };
}

forEachDialect((dialect, open) => {
  test('a receipt finds its message by the carrier id of the message or of any of its parts', async () => {
    const store = await open();
    const acc = (await createAccount(serviceContext(store), { name: 'Acme', email: 'ops@example.com' })).id;
    await insertMessages(store.db, [sentMessage(acc, 1, '1A2B'), sentMessage(acc, 2, '77')]);
    // More parts than one INSERT of six rows takes.
    await insertCarrierParts(
      store.db,
      Array.from({ length: 8 }, (_, i) => ({
        message_id: i < 7 ? 'msg_1' : 'msg_2',
        part_index: i,
        carrier_id: `00${i}f`,
        part_key: `${i}f`,
        part_alt: i % 2 ? String(parseInt(`${i}f`, 16)) : null,
        created_at: NOW,
      })),
    );
    assert.deepEqual(
      (await messagesByCarrierIds(store.db, ['1A2B', 'nope'])).map((m) => m.id),
      ['msg_1'],
    );
    const parts = await carrierPartsByKeys(store.db, ['0f', String(parseInt('3f', 16)), '7f', 'zz']);
    assert.deepEqual(
      parts.map((p) => [p.message_id, p.part_key, p.part_alt]).sort(),
      [
        ['msg_1', '0f', null],
        ['msg_1', '3f', String(parseInt('3f', 16))],
        ['msg_2', '7f', String(parseInt('7f', 16))],
      ],
    );
  });

  test('what a route does with ids is remembered and replaced', async () => {
    const store = await open();
    assert.equal((await routeIdSpellings(store.db, [])).size, 0);
    await saveRouteIdSpelling(store.db, 'smsc-a', 'hex_as_decimal', NOW);
    await saveRouteIdSpelling(store.db, 'smsc-b', 'same', NOW);
    await saveRouteIdSpelling(store.db, 'smsc-a', 'decimal_as_hex', NOW + 1);
    assert.deepEqual(
      [...(await routeIdSpellings(store.db, ['smsc-a', 'smsc-b', 'smsc-c']))].sort(),
      [
        ['smsc-a', 'decimal_as_hex'],
        ['smsc-b', 'same'],
      ],
    );
  });

  test('the oldest dispatch claim still held, or null', async () => {
    const store = await open();
    const lease = 30_000;
    assert.equal(await oldestDispatchClaim(store.db, NOW, lease), null);
    await enqueueJobs(
      store.db,
      [
        { queue: 'dispatch', ref: 'msg_1', runAt: NOW - 10 },
        { queue: 'receipt', ref: 'r', runAt: NOW - 10 },
      ],
      NOW - 10,
    );
    // Due but not yet claimed: no submit can be on its way.
    assert.equal(await oldestDispatchClaim(store.db, NOW, lease), null);
    await claimJobs(store.db, 'dispatch', 10, NOW, lease);
    await claimJobs(store.db, 'receipt', 10, NOW + 5, lease);
    assert.equal(await oldestDispatchClaim(store.db, NOW + 1, lease), NOW);
  });
});
