/**
 * Sessions of Pigeon's SMPP listener (DECISIONS.md §10) over real TCP on 127.0.0.1: every bind
 * type and every answer, the hostile ones included, with the `smpp` package's client and raw
 * sockets. One listener for the file; addresses of 127.0.0.0/8 keep the failed-bind counts of the
 * tests apart.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setAccountStatus } from '../../src/services/accounts/accounts.ts';
import { deleteSmppUser, listSmppUsers, rotateSmppUser } from '../../src/services/smpp-access/smpp-users.ts';
import { bound, call, closed, esme, header, pduBytes, raw, serverFixture, waitFor, type ServerFixture } from './server-fixture.ts';

let f: ServerFixture;
before(async () => {
  f = await serverFixture({ AUTH_FAILURE_LIMIT: '4' });
});
after(async () => {
  await f.close();
});

test('each bind type binds with the right password, answered as 3.4 by Pigeon; unbind gets unbind_resp and the connection closes', async () => {
  const user = await f.user();
  for (const type of ['bind_transmitter', 'bind_receiver', 'bind_transceiver']) {
    const session = await esme(f.port);
    const answer = await call(session, type, { system_id: user.system_id, password: user.password, interface_version: 0x50 });
    assert.equal(answer.command_status, 0, type);
    assert.equal(answer.command, `${type}_resp`);
    assert.equal(answer.system_id, 'Pigeon');
    assert.equal(answer.sc_interface_version, 0x34);
    const unbound = await call(session, 'unbind');
    assert.equal(unbound.command, 'unbind_resp');
    await closed(session);
  }
});

test('a wrong password or an unknown system_id is 0x0E, and the connection stays for another try', async () => {
  const user = await f.user();
  const session = await esme(f.port, '127.0.0.4');
  assert.equal((await call(session, 'bind_transceiver', { system_id: user.system_id, password: 'wrong' })).command_status, 0x0e);
  assert.equal((await call(session, 'bind_transceiver', { system_id: 'nobody', password: user.password })).command_status, 0x0e);
  assert.equal((await call(session, 'bind_transceiver', { system_id: user.system_id, password: user.password })).command_status, 0);
  session.close();
  await closed(session);
});

test('outside the allow-list, over max-binds or with the account suspended: 0x0D', async () => {
  const fenced = await f.user({ allow: ['127.0.0.2/32'] });
  const outside = await esme(f.port);
  assert.equal((await call(outside, 'bind_transceiver', { system_id: fenced.system_id, password: fenced.password })).command_status, 0x0d);
  const inside = await bound(f.port, fenced, 'bind_transceiver', '127.0.0.2');

  const single = await f.user({ maxBinds: 1 });
  const first = await bound(f.port, single, 'bind_transmitter');
  const second = await esme(f.port);
  assert.equal((await call(second, 'bind_receiver', { system_id: single.system_id, password: single.password })).command_status, 0x0d);
  first.close();
  await closed(first);
  // The bind's row goes when its connection does: the next bind is allowed.
  await waitFor(async () => (await call(second, 'bind_receiver', { system_id: single.system_id, password: single.password })).command_status === 0, { timeout: 3000 });

  const suspended = await f.user();
  await setAccountStatus(f.h.ctx, (await listSmppUsers(f.h.ctx)).find((u) => u.system_id === suspended.system_id)!.account_id, 'suspended');
  const third = await esme(f.port);
  assert.equal((await call(third, 'bind_transceiver', { system_id: suspended.system_id, password: suspended.password })).command_status, 0x0d);
  for (const s of [outside, inside, second, third]) s.close();
  await Promise.all([outside, inside, second, third].map(closed));
});

test('a second bind on one connection is 0x05; submit_sm before a bind or on a receiver bind is 0x04 and the connection stays', async () => {
  const user = await f.user();
  const session = await esme(f.port);
  assert.equal((await call(session, 'submit_sm', { destination_addr: '447700900001', short_message: 'hi' })).command_status, 0x04);
  assert.equal((await call(session, 'enquire_link')).command, 'enquire_link_resp');
  assert.equal((await call(session, 'bind_receiver', { system_id: user.system_id, password: user.password })).command_status, 0);
  assert.equal((await call(session, 'bind_transceiver', { system_id: user.system_id, password: user.password })).command_status, 0x05);
  assert.equal((await call(session, 'submit_sm', { destination_addr: '447700900001', short_message: 'hi' })).command_status, 0x04);
  assert.equal((await call(session, 'enquire_link')).command, 'enquire_link_resp');
  session.close();
  await closed(session);
});

test('an unknown command, or one Pigeon does not serve, gets generic_nack 0x03 and the connection stays', async () => {
  const client = await raw(f.port);
  client.socket.write(Buffer.concat([header(16, 0x00000099, 0, 7), header(16, 0x00000003 /* query_sm */, 0, 8), pduBytes('enquire_link', { sequence_number: 9 })]));
  await waitFor(() => client.pdus().length === 3, { message: () => `three answers, got ${JSON.stringify(client.pdus())}` });
  assert.deepEqual(
    client.pdus().map((p) => [p.id, p.status, p.seq]),
    [
      [0x80000000, 0x03, 7],
      [0x80000000, 0x03, 8],
      [0x80000015, 0, 9],
    ],
  );
  assert.equal(client.socket.destroyed, false);
  client.socket.destroy();
});

test('a malformed PDU (length under 16, over 64 KiB, a field past its end) gets generic_nack and the connection closes', async () => {
  const bindBody = Buffer.from('acme\u0000secr', 'latin1'); // the password never ends
  const cases: [string, Buffer, number][] = [
    ['length 12', Buffer.concat([header(12, 0x15, 0, 0)]), 0],
    ['length 65,537', header(65_537, 0x04, 0, 3), 3],
    ['a field past its end', Buffer.concat([header(16 + bindBody.length, 0x09, 0, 4), bindBody]), 4],
  ];
  for (const [name, bytes, seq] of cases) {
    const client = await raw(f.port);
    client.socket.write(bytes);
    await client.closed;
    assert.deepEqual(client.pdus().map((p) => [p.id, p.status, p.seq]), [[0x80000000, 0x02, seq]], name);
  }
});

test('bytes that are not SMPP (an HTTP request, a TLS hello) close the connection with no answer', async () => {
  const hello = Buffer.from('16030100a5010000a10303', 'hex');
  for (const bytes of [Buffer.from('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'), hello]) {
    const client = await raw(f.port);
    client.socket.write(bytes);
    await client.closed;
    assert.equal(client.received().length, 0);
  }
});

test('no bind within the bind timeout: closed; enquire_link is answered before it', async () => {
  const client = await raw(f.port);
  client.socket.write(pduBytes('enquire_link', { sequence_number: 1 }));
  const started = Date.now();
  await client.closed;
  assert.ok(Date.now() - started >= 700, 'not before the timeout (800 ms)');
  assert.deepEqual(client.pdus().map((p) => p.id), [0x80000015]);
});

test('the server sends enquire_link after silence and closes after three unanswered', async () => {
  const user = await f.user();
  const client = await raw(f.port);
  client.socket.write(pduBytes('bind_transceiver', { system_id: user.system_id, password: user.password, sequence_number: 1 }));
  await client.closed;
  const pdus = client.pdus();
  assert.equal(pdus[0]!.id, 0x80000009);
  assert.equal(pdus[0]!.status, 0);
  assert.deepEqual(pdus.slice(1).map((p) => p.id), [0x15, 0x15, 0x15]);

  // A client that answers stays bound.
  const answering = await bound(f.port, user);
  let asked = 0;
  answering.on('enquire_link', () => asked++);
  await waitFor(() => asked >= 4, { message: 'four enquire_link' });
  assert.equal(answering.socket.destroyed, false);
  answering.close();
  await closed(answering);
});

test('failed binds count per address: past AUTH_FAILURE_LIMIT the failing ones get 0x0D at no scrypt, a password proved before still binds', async () => {
  const user = await f.user();
  const known = await bound(f.port, user, 'bind_transceiver', '127.0.0.3');
  const fresh = await f.user();
  const session = await esme(f.port, '127.0.0.3');
  const statuses = [];
  for (let i = 0; i < 6; i++) statuses.push((await call(session, 'bind_transceiver', { system_id: user.system_id, password: `bad${i}` })).command_status);
  assert.deepEqual(statuses, [0x0e, 0x0e, 0x0e, 0x0e, 0x0d, 0x0d]);
  assert.equal((await call(session, 'bind_transceiver', { system_id: fresh.system_id, password: fresh.password })).command_status, 0x0d);
  assert.equal((await call(session, 'bind_transceiver', { system_id: user.system_id, password: user.password })).command_status, 0);
  // Another address is not affected.
  const elsewhere = await esme(f.port, '127.0.0.5');
  assert.equal((await call(elsewhere, 'bind_transceiver', { system_id: fresh.system_id, password: fresh.password })).command_status, 0);
  for (const s of [known, session, elsewhere]) s.close();
  await Promise.all([known, session, elsewhere].map(closed));
});

test('rotating the password, deleting the user or suspending the account ends its binds within 2 s: unbind, then close', async () => {
  const rotated = await f.user();
  const deleted = await f.user();
  const suspended = await f.user();
  const sessions = await Promise.all([rotated, deleted, suspended].map((u) => bound(f.port, u)));
  const unbinds = sessions.map((s) => new Promise<void>((resolve) => s.once('unbind', (pdu) => (s.send(pdu.response()), resolve()))));
  const listed = await listSmppUsers(f.h.ctx);
  assert.deepEqual(
    listed.filter((u) => [rotated, deleted, suspended].some((x) => x.system_id === u.system_id)).map((u) => u.binds.map((b) => [b.type, b.address])),
    [[['transceiver', '127.0.0.1']], [['transceiver', '127.0.0.1']], [['transceiver', '127.0.0.1']]],
  );
  const changes = [
    () => rotateSmppUser(f.h.ctx, rotated.system_id),
    () => deleteSmppUser(f.h.ctx, deleted.system_id),
    () => setAccountStatus(f.h.ctx, listed.find((u) => u.system_id === suspended.system_id)!.account_id, 'suspended'),
  ];
  for (const [i, change] of changes.entries()) {
    await change();
    const changed = Date.now();
    await unbinds[i];
    await closed(sessions[i]!);
    assert.ok(Date.now() - changed < 2000, `change ${i}: ${Date.now() - changed} ms`);
  }
  await waitFor(async () => (await listSmppUsers(f.h.ctx)).every((u) => u.system_id !== rotated.system_id || u.binds.length === 0), { message: 'the bind rows gone' });
});

test('a flood of connections from one address that never bind holds at most 32 sockets; other addresses still bind', async () => {
  const user = await f.user();
  const flood = await Promise.all(Array.from({ length: 40 }, () => raw(f.port, '127.0.0.6')));
  await waitFor(() => flood.filter((c) => c.socket.destroyed).length === 8, { message: () => `8 refused, got ${flood.filter((c) => c.socket.destroyed).length}` });
  const session = await bound(f.port, user, 'bind_transceiver', '127.0.0.7');
  session.close();
  for (const c of flood) c.socket.destroy();
  await Promise.all([closed(session), ...flood.map((c) => c.closed)]);
});

test('no connection outlives its client: the server holds no session once they are gone', async () => {
  await waitFor(() => f.server.sessions.size === 0, { timeout: 3000, message: () => `${f.server.sessions.size} sessions left` });
});
