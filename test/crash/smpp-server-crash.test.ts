/**
 * Pigeon as an SMSC killed with SIGKILL (DECISIONS.md §10): a real `pigeon serve` takes submits
 * over SMPP with 40 unanswered at a time and is killed mid-stream. Every submit it answered is
 * stored, once, and charged once; after the restart the receipts of the answered messages, queued
 * while no receiver was bound, all reach the receiver that binds then. The jobs the killed process
 * held are taken over when their lease ends: JOB_LEASE_MS is short here so that the test is.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { PDU } from 'smpp';
import { encodeGsm7 } from '../../src/carriers/smpp/gsm7.ts';
import type { Store } from '../../src/store/connect.ts';
import { ledgerMatchesBalance } from '../../src/services/accounts/accounts.ts';
import { createSmppUser } from '../../src/services/smpp-access/smpp-users.ts';
import { createCustomer } from '../helpers/customers.ts';
import { freePort, startPigeon, type PigeonProcess } from '../helpers/processes.ts';
import { processDatabase, serviceContext } from '../helpers/test-store.ts';
import { bound, closed, waitFor } from '../smpp/server-fixture.ts';

const dir = mkdtempSync(join(tmpdir(), 'pigeon-smpp-crash-'));
const database = processDatabase('smpp_server_crash', dir);
let store: Store;
let server: PigeonProcess | null = null;
const TOTAL = 300;
const WINDOW = 40;
const KILL_AFTER = 120;

before(async () => {
  store = await database.open();
});
after(async () => {
  await server?.kill();
  await database.close();
  rmSync(dir, { recursive: true, force: true });
});

test('killed with submits in flight: every answered submit stored and charged once; queued receipts all delivered after the restart', async () => {
  const ctx = serviceContext(store);
  const customer = await createCustomer(ctx, { name: 'Crash Ltd', email: 'crash@example.com', credits: 1000 });
  const user = await createSmppUser(ctx, customer.accountId, { systemId: 'crash', tps: 10_000 });
  const smppPort = await freePort();
  const env = { DATABASE_URL: database.url, PORT: String(await freePort()), SMPP_SERVER_PORT: String(smppPort), SIM_DELIVERY_DELAY_MS: '20', JOB_LEASE_MS: '2000', RATE_LIMIT_MAX: '1000000' };
  server = await startPigeon(['serve'], env);

  const tx = await bound(smppPort, user, 'bind_transmitter');
  const answered = new Set<string>();
  let sent = 0;
  let killedAt: number | null = null;
  let socketClosed = false;
  const refusals: number[] = [];
  // The window is kept full across the kill, as a client that has not yet seen the connection drop
  // does: answers already on their way when the signal lands may fill it again, so submits are still
  // outstanding when the process dies, however fast it answered the ones before.
  await new Promise<void>((resolve) => {
    const pump = () => {
      while (sent < TOTAL && sent - answered.size < WINDOW && !socketClosed && refusals.length === 0) {
        const i = sent++;
        tx.submit_sm({ source_addr_ton: 5, source_addr: 'Acme', dest_addr_ton: 1, destination_addr: '447700900001', registered_delivery: 1, short_message: encodeGsm7(`crash ${i}`) }, (pdu: PDU) => {
          if (pdu.command_status === 0) answered.add(String(pdu.message_id));
          else if (killedAt === null) refusals.push(pdu.command_status);
          // A refusal fails the test (below) rather than leave it waiting for answers that never come.
          if (refusals.length > 0) return resolve();
          if (answered.size >= KILL_AFTER && killedAt === null) {
            killedAt = answered.size;
            server!.signalAll('SIGKILL');
          }
          pump();
        });
      }
    };
    tx.socket.once('close', () => {
      socketClosed = true;
      resolve();
    });
    pump();
  });
  assert.deepEqual(refusals, [], 'no submit refused before the kill');
  await server.kill();
  await closed(tx);
  const inFlightAtKill = sent - answered.size;
  assert.ok(killedAt !== null && inFlightAtKill > 0, `killed after ${killedAt} answers; answered ${answered.size}, unanswered ${inFlightAtKill}`);

  const rows = await store.db.selectFrom('messages').select(['id']).where('account_id', '=', customer.accountId).execute();
  const stored = new Set(rows.map((r) => r.id));
  for (const id of answered) assert.ok(stored.has(id), `answered ${id} is stored`);
  assert.ok(rows.length <= answered.size + inFlightAtKill, 'nothing stored that was never submitted');
  const { balance, ledger } = await ledgerMatchesBalance(ctx, customer.accountId);
  assert.equal(balance, ledger);
  assert.equal(balance, 1000 - rows.length, 'each stored message charged once');

  server = await startPigeon(['serve'], env);
  const receipts = new Set<string>();
  const rx = await bound(smppPort, user, 'bind_receiver', undefined, (s) =>
    s.on('deliver_sm', (pdu: PDU) => {
      receipts.add(String(pdu.receipted_message_id));
      s.send(pdu.response());
    }),
  );
  await waitFor(() => [...stored].every((id) => receipts.has(id)), { timeout: 60_000, message: () => `receipts for ${stored.size} stored messages, got ${receipts.size}:\n${server!.output().slice(-2000)}` });
  rx.close();
  await closed(rx);
});
