/**
 * PostgreSQL's pipeline (src/store/pipelined-postgres.ts), watched on the wire: a proxy on
 * 127.0.0.1 between the store and the server notes each protocol message in the order it passes.
 * A transaction's BEGIN goes out with its first statement, and statements asked for together
 * (`inOneTrip`) go out before the first is answered. That each still runs after the one before
 * it, seeing what was committed meanwhile, is test/store/acceptance.repository.test.ts's.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net';
import { sql } from 'kysely';
import { named, openStore } from '../../src/store/connect.ts';
import { commitWith, inOneTrip } from '../../src/store/pipelined-postgres.ts';
import { TEST_DATABASE_URL } from '../helpers/test-store.ts';

const postgres = TEST_DATABASE_URL.startsWith('postgres');

/** The protocol messages of one direction, by type, as they pass (after the startup message). */
function messages(into: string[], tag: string, startup: boolean): (chunk: Buffer) => void {
  let pending = Buffer.alloc(0);
  let first = startup;
  return (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    for (;;) {
      // The client's first message (and an SSL request) has no type byte: a length, then the rest.
      const head = first ? 0 : 1;
      if (pending.length < head + 4) return;
      const length = pending.readInt32BE(head);
      if (pending.length < head + length) return;
      if (!first) into.push(`${tag}${String.fromCharCode(pending[0]!)}`);
      first = false;
      pending = pending.subarray(head + length);
    }
  };
}

test('BEGIN goes out with the first statement, and statements asked for together with each other', { skip: !postgres && 'PostgreSQL only' }, async () => {
  const target = new URL(TEST_DATABASE_URL);
  const wire: string[] = [];
  const sockets: Socket[] = [];
  const proxy = createServer((client) => {
    const server = createConnection({ host: '127.0.0.1', port: Number(target.port || 5432) });
    sockets.push(client, server);
    const fromClient = messages(wire, '>', true);
    const fromServer = messages(wire, '<', false);
    client.on('data', (d) => {
      fromClient(d);
      server.write(d);
    });
    server.on('data', (d) => {
      fromServer(d);
      client.write(d);
    });
    client.on('error', () => server.destroy());
    server.on('error', () => client.destroy());
    client.on('close', () => server.end());
    server.on('close', () => client.end());
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const url = new URL(TEST_DATABASE_URL);
  url.host = `127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  url.searchParams.set('sslmode', 'disable');
  const store = openStore(url.toString());
  after(async () => {
    await store.close();
    for (const s of sockets) s.destroy();
    proxy.close();
  });
  await sql`select 1`.execute(store.db);

  // A message of the server's answers only after everything before it was read: the position of
  // the first ReadyForQuery ('Z') after BEGIN's Query ('Q') says what was sent before its answer.
  wire.length = 0;
  const results = await store.db.transaction().execute(async (trx) =>
    inOneTrip(trx, [
      sql`select pg_advisory_xact_lock(${7001}) as locked`.compile(trx),
      sql`select ${2}::int as second`.compile(trx),
      sql`${named}select ${3}::int as third`.compile(trx),
    ]),
  );
  assert.deepEqual(results.map((r) => Object.keys(r.rows[0] as object)), [['locked'], ['second'], ['third']]);
  const begin = wire.indexOf('>Q');
  assert.ok(begin >= 0, `BEGIN was sent as a Query message: ${wire.join(' ')}`);
  const answered = wire.indexOf('<Z', begin);
  const sent = wire.slice(begin, answered);
  // Each statement with parameters is Parse, Bind, Describe, Execute, Sync (a named one, Parse once).
  assert.equal(sent.filter((m) => m === '>E').length, 3, `all three statements were on the wire before BEGIN's answer: ${wire.join(' ')}`);
  assert.equal(sent.filter((m) => m === '>S').length, 3);
  // COMMIT waited for the last answer: it is the last message sent.
  assert.equal(wire.filter((m) => m.startsWith('>')).at(-1), '>Q');
  assert.equal(wire.filter((m) => m === '<Z').length, 5, 'BEGIN, three statements and COMMIT each answered');

  // The last statement with its COMMIT: one trip, and the connection serves the next transaction.
  wire.length = 0;
  const last = await store.db.transaction().execute(async (trx) => {
    await sql`select ${1}::int as first`.execute(trx);
    return commitWith(trx, sql<{ last: number }>`select ${2}::int as last`.compile(trx));
  });
  assert.deepEqual(last.rows, [{ last: 2 }]);
  const lastSent = wire.lastIndexOf('>E');
  assert.deepEqual(wire.slice(lastSent + 1).filter((m) => m.startsWith('>')), ['>S', '>Q'], `COMMIT went with the last statement: ${wire.join(' ')}`);
  assert.ok(wire.indexOf('>Q', lastSent) < wire.indexOf('<Z', lastSent), `COMMIT was sent before the last statement's answer: ${wire.join(' ')}`);
  // Outside a transaction it is the statement alone, and every connection of the pool goes on.
  assert.deepEqual((await commitWith(store.db, sql<{ alone: number }>`select ${3}::int as alone`.compile(store.db))).rows, [{ alone: 3 }]);
  await Promise.all(Array.from({ length: 12 }, () => store.db.transaction().execute((trx) => sql`select 1`.execute(trx))));
});
