import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { loadConfig } from '../../src/config/config.ts';
import { SmppCarrier } from '../../src/carriers/smpp/smpp-carrier.ts';
import { waitFor } from '../helpers/wait-for.ts';

test('an SMSC that accepts the connection but never answers the bind is dropped and retried', async () => {
  const sockets: Socket[] = [];
  const server = createServer((s) => sockets.push(s));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const config = loadConfig({
    CARRIER: 'smpp',
    SMPP_HOST: '127.0.0.1',
    SMPP_PORT: String(port),
    SMPP_SYSTEM_ID: 'pigeon',
    SMPP_RESPONSE_TIMEOUT_MS: '100',
    SMPP_RECONNECT_MIN_MS: '20',
  });
  const carrier = new SmppCarrier(config.smpp, pino({ level: 'silent' }), Date.now);
  carrier.start();
  try {
    await waitFor(() => sockets.length >= 2, { timeout: 20_000, message: 'a second connection after the silent one was dropped' });
    assert.ok(sockets.length >= 2, 'connected again after the silent one was dropped');
    assert.equal(carrier.status().ready, false);
    assert.match(carrier.status().detail, /not bound within 100 ms/);
    const outcomes = await carrier.submit([{ id: 'msg_1', recipient: '+447911123456', sender: 'Acme', body: 'hi', encoding: 'GSM-7', segments: 1 }]);
    assert.equal(outcomes[0]!.kind, 'retry');
  } finally {
    await carrier.close();
    sockets.forEach((s) => s.destroy());
    server.close();
  }
});
