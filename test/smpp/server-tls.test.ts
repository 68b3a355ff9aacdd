/**
 * SMPP inside TLS (SMPP_SERVER_TLS_PORT): the `smpp` package's client binds and submits over TLS
 * on 127.0.0.1 with a certificate made for the test; plain SMPP on the TLS port is closed; the
 * three variables go together.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import smpp, { type PDU, type Session } from 'smpp';
import { ConfigError, loadConfig } from '../../src/config/config.ts';
import { encodeGsm7 } from '../../src/carriers/smpp/gsm7.ts';
import { call, closed, pduBytes, raw, serverFixture, type ServerFixture } from './server-fixture.ts';

const dir = mkdtempSync(join(tmpdir(), 'pigeon-smpp-tls-'));
let f: ServerFixture;

before(async () => {
  const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-days', '1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
  f = await serverFixture({}, { tls: { port: 0, cert: readFileSync(join(dir, 'cert.pem')), key: readFileSync(join(dir, 'key.pem')) } });
});
after(async () => {
  await f.close();
  rmSync(dir, { recursive: true, force: true });
});

async function tlsEsme(port: number): Promise<Session> {
  const session = smpp.connect({ host: '127.0.0.1', port, tls: true, ca: readFileSync(join(dir, 'cert.pem')), servername: '127.0.0.1', checkServerIdentity: () => undefined });
  session.on('error', () => {});
  session.on('enquire_link', (pdu: PDU) => session.send(pdu.response()));
  await new Promise<void>((resolve, reject) => {
    session.once('secureConnect', () => resolve());
    session.once('error', reject);
  });
  return session;
}

test('an ESME binds and submits over TLS, trusting the listener\'s certificate as its CA', async () => {
  const user = await f.user();
  const session = await tlsEsme(f.server.tlsPort!);
  assert.equal((session.socket as unknown as { encrypted?: boolean }).encrypted, true);
  assert.equal((await call(session, 'bind_transceiver', { system_id: user.system_id, password: user.password })).command_status, 0);
  const answer = await call(session, 'submit_sm', { source_addr_ton: 5, source_addr: 'Acme', dest_addr_ton: 1, destination_addr: '447700900001', short_message: encodeGsm7('over TLS') });
  assert.equal(answer.command_status, 0);
  assert.match(String(answer.message_id), /^msg_/);
  session.close();
  await closed(session);
});

test('plain SMPP on the TLS port is closed without an answer', async () => {
  const client = await raw(f.server.tlsPort!);
  client.socket.write(pduBytes('enquire_link', { sequence_number: 1 }));
  await client.closed;
  assert.equal(client.pdus().length, 0);
});

test('SMPP_SERVER_TLS_PORT, _CERT and _KEY go together', () => {
  assert.equal(loadConfig({}).smppServer.tls, null);
  assert.deepEqual(loadConfig({ SMPP_SERVER_TLS_PORT: '3550', SMPP_SERVER_TLS_CERT: '/etc/pigeon/cert.pem', SMPP_SERVER_TLS_KEY: '/etc/pigeon/key.pem' }).smppServer.tls, {
    port: 3550,
    certFile: '/etc/pigeon/cert.pem',
    keyFile: '/etc/pigeon/key.pem',
  });
  for (const [env, variable] of [
    [{ SMPP_SERVER_TLS_PORT: '3550' }, 'SMPP_SERVER_TLS_CERT'],
    [{ SMPP_SERVER_TLS_PORT: '3550', SMPP_SERVER_TLS_CERT: '/c.pem' }, 'SMPP_SERVER_TLS_KEY'],
    [{ SMPP_SERVER_TLS_CERT: '/c.pem', SMPP_SERVER_TLS_KEY: '/k.pem' }, 'SMPP_SERVER_TLS_PORT'],
  ] as const) {
    assert.throws(
      () => loadConfig(env),
      (e: unknown) => e instanceof ConfigError && e.problems.some((p) => p.variable === variable),
      variable,
    );
  }
});
