/**
 * Pigeon's SMPP listener with an ESME nobody here wrote: Perl's Net::SMPP (test/smpp/interop/esme.pl)
 * binds on 127.0.0.1, submits in each coding and in UDH parts, and reads its receipts.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { decodeGsm7, encodeGsm7, encodeUcs2 } from '../../../src/carriers/smpp/gsm7.ts';
import { messageDetail } from '../../../src/services/messages/reports.ts';
import { listSmppUsers } from '../../../src/services/smpp-access/smpp-users.ts';
import { serverFixture, waitFor, type ServerFixture } from '../server-fixture.ts';

const ESME = fileURLToPath(new URL('./esme.pl', import.meta.url));

let f: ServerFixture;
before(async () => {
  const probe = spawnSync('perl', ['-MNet::SMPP', '-e1'], { encoding: 'utf8' });
  assert.equal(probe.status, 0, `These tests need Perl's Net::SMPP: apt-get install -y libnet-smpp-perl. perl said: ${probe.stderr}`);
  f = await serverFixture();
});
after(async () => {
  await f.close();
});

function perlEsme(port: number, systemId: string, password: string) {
  const child = spawn('perl', [ESME, '--port', String(port), '--system-id', systemId, '--password', password]);
  const events: Record<string, any>[] = [];
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  createInterface({ input: child.stdout }).on('line', (line) => events.push(JSON.parse(line)));
  let seen = 0;
  const next = async (ev: string): Promise<Record<string, any>> => {
    const found = await waitFor(() => events.slice(seen).find((e) => e.ev === ev), { message: () => `${ev} from Net::SMPP: ${JSON.stringify(events.slice(seen))} ${stderr}` });
    seen = events.indexOf(found) + 1;
    return found;
  };
  const send = (cmd: Record<string, unknown>) => child.stdin.write(`${JSON.stringify(cmd)}\n`);
  return { child, events, next, send, exited: new Promise<number | null>((resolve) => child.once('exit', resolve)) };
}

test('Net::SMPP binds, submits GSM, UCS-2 and UDH parts, and gets a receipt for every part', async () => {
  const user = await f.user();
  const accountId = (await listSmppUsers(f.h.ctx)).find((u) => u.system_id === user.system_id)!.account_id;
  const esme = perlEsme(f.port, user.system_id, user.password);
  assert.equal((await esme.next('bound')).status, 0);

  const submit = async (fields: Record<string, unknown>) => {
    esme.send({ cmd: 'submit', source: 'Acme', ton: 5, to: '447700900001', registered_delivery: 1, ...fields });
    return esme.next('submit_resp');
  };
  const gsm = await submit({ coding: 0, hex: encodeGsm7('Hello from Perl {ok}').toString('hex') });
  const ucs = await submit({ coding: 8, hex: encodeUcs2('Здравствуй 😀').toString('hex') });
  const udh = (seq: number) => Buffer.from([5, 0, 3, 0x21, 2, seq]);
  const p1 = await submit({ esm_class: 0x40, hex: Buffer.concat([udh(1), encodeGsm7('p'.repeat(153))]).toString('hex') });
  const p2 = await submit({ esm_class: 0x40, hex: Buffer.concat([udh(2), encodeGsm7('end')]).toString('hex') });
  for (const r of [gsm, ucs, p1, p2]) assert.equal(r.status, 0);
  const body = async (id: string) => (await messageDetail(f.h.ctx, accountId, id)).message.body;
  assert.equal(await body(gsm.message_id), 'Hello from Perl {ok}');
  assert.equal(await body(ucs.message_id), 'Здравствуй 😀');
  assert.equal(await body(p1.message_id), `${'p'.repeat(153)}end`);
  assert.equal(p2.message_id, `${p1.message_id}.2`);

  await f.h.workers.drain();
  f.h.clock.advance(1000);
  await f.h.workers.drain();
  esme.send({ cmd: 'receive', count: 4, timeout: 10 });
  const received = await esme.next('received');
  assert.equal(received.count, 4);
  const receipts = esme.events.filter((e) => e.ev === 'deliver_sm');
  const ids = receipts.map((r) => String(r.receipted_message_id).replace(/\0+$/, '')).sort();
  assert.deepEqual(ids, [gsm.message_id, ucs.message_id, p1.message_id, p2.message_id].sort());
  for (const r of receipts) {
    assert.equal(r.esm_class, 4);
    assert.equal(r.message_state, 2);
    const id = String(r.receipted_message_id).replace(/\0+$/, '');
    assert.match(decodeGsm7(Buffer.from(r.hex, 'hex')), new RegExp(`^id:${id.replace('.', '\\.')} sub:001 dlvrd:001 .* stat:DELIVRD err:000 text:`));
  }
  esme.send({ cmd: 'unbind' });
  assert.equal((await esme.next('unbind_resp')).status, 0);
  assert.equal(await esme.exited, 0);
});
