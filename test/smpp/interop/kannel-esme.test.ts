/**
 * Kannel (Debian's bearerbox and smsbox, which nobody here wrote) in front of Pigeon's SMPP
 * listener, with the configuration of docs/smpp.md ("Kannel in front of Pigeon") as written: only
 * its ports, host, credentials and folders are replaced, every server on 127.0.0.1. A message
 * sent through Kannel's sendsms, one in one part and one that Kannel splits into UDH parts, is
 * stored and charged once by Pigeon; their receipts, queued while Pigeon had dropped the link,
 * reach Kannel once it binds again, and Kannel calls the dlr-url of each message; messages to the
 * account's number, one long in UDH parts, reach Kannel's sms-service whole.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ledgerMatchesBalance } from '../../../src/services/accounts/accounts.ts';
import { receiveInbound } from '../../../src/services/inbound/inbound.ts';
import { assignNumber } from '../../../src/services/numbers/numbers.ts';
import { listSmppUsers } from '../../../src/services/smpp-access/smpp-users.ts';
import { freePort, stopChildren } from '../../helpers/processes.ts';
import { serverFixture, waitFor, type ServerFixture } from '../server-fixture.ts';

const GUIDE = fileURLToPath(new URL('../../../docs/smpp.md', import.meta.url));
const HAVE_KANNEL = existsSync('/usr/sbin/bearerbox') && existsSync('/usr/sbin/smsbox');

/** The guide's kannel.conf, its lines `key = value` replaced where `values` says (by key, each occurrence in turn). */
function guideConfig(values: Record<string, string | string[]>): string {
  const block = /```ini\n(# \/etc\/kannel\/kannel\.conf[^\n]*\n[\s\S]*?)```/.exec(readFileSync(GUIDE, 'utf8'));
  assert.ok(block, 'docs/smpp.md has the kannel.conf block');
  const used = new Map<string, number>();
  const text = block[1]!.replace(/^([a-z-]+) = (.*)$/gm, (line, key: string) => {
    const value = values[key];
    if (value === undefined) return line;
    const n = used.get(key) ?? 0;
    used.set(key, n + 1);
    return `${key} = ${Array.isArray(value) ? value[n] : value}`;
  });
  for (const key of Object.keys(values)) assert.ok(used.has(key), `the guide's kannel.conf sets ${key}`);
  return text;
}

let f: ServerFixture;
let dir: string;
let sink: Server;
const calls: URL[] = [];
const boxes: ChildProcess[] = [];

before(async () => {
  f = await serverFixture();
  dir = mkdtempSync(join(tmpdir(), 'pigeon-kannel-esme-'));
  sink = createServer((req, res) => {
    calls.push(new URL(req.url!, 'http://127.0.0.1'));
    res.end('');
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
});

after(async () => {
  await stopChildren(boxes);
  sink?.close();
  await f?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('Kannel configured as the guide says sends through Pigeon, gets its receipts to the dlr-url, and receives the account\'s inbound messages', { skip: !HAVE_KANNEL && 'Kannel is not installed (apt-get install kannel)', timeout: 90_000 }, async () => {
  const user = await f.user({ credits: 100 });
  const accountId = (await listSmppUsers(f.h.ctx)).find((u) => u.system_id === user.system_id)!.account_id;
  await assignNumber(f.h.ctx, accountId, '+447700900777');
  const [adminPort, boxPort, sendPort] = [await freePort(), await freePort(), await freePort()];
  const sinkUrl = `http://127.0.0.1:${(sink.address() as { port: number }).port}`;
  const config = join(dir, 'kannel.conf');
  writeFileSync(
    config,
    guideConfig({
      'admin-port': String(adminPort),
      'smsbox-port': String(boxPort),
      'bearerbox-port': String(boxPort),
      'sendsms-port': String(sendPort),
      host: '127.0.0.1',
      port: String(f.port),
      'smsc-username': user.system_id,
      'smsc-password': user.password,
      'log-file': [`"${dir}/bearerbox.log"`, `"${dir}/smsbox.log"`],
      'store-location': `"${dir}/kannel.store"`,
      // Sooner than the guide's 5 s: the test drops the link once.
      'reconnect-delay': '2',
      'get-url': `"${sinkUrl}/inbound?from=%p&to=%P&text=%a"`,
    }),
  );
  const logs = () => ['bearerbox.log', 'smsbox.log'].map((l) => (existsSync(join(dir, l)) ? readFileSync(join(dir, l), 'utf8').slice(-1500) : '')).join('\n');
  const status = () => fetch(`http://127.0.0.1:${adminPort}/status.txt?password=change-me`).then((r) => r.text(), () => '');
  boxes.push(spawn('/usr/sbin/bearerbox', [config], { stdio: 'ignore' }));
  await waitFor(async () => (await status()) !== '', { message: () => `bearerbox's admin interface:\n${logs()}` });
  boxes.push(spawn('/usr/sbin/smsbox', [config], { stdio: 'ignore' }));
  let seen = '';
  await waitFor(async () => /online/.test((seen = await status())), { message: () => `Kannel bound to Pigeon:\n${seen}\n${logs()}` });
  // The bind is bearerbox's; smsbox opens its sendsms port on its own time.
  await waitFor(async () => (await fetch(`http://127.0.0.1:${sendPort}/`).then(() => true, () => false)), { message: () => `smsbox's sendsms port:\n${logs()}` });

  const sendsms = async (n: number, text: string) => {
    const dlr = `${sinkUrl}/dlr?n=${n}&type=%d`;
    const url = `http://127.0.0.1:${sendPort}/cgi-bin/sendsms?username=shop&password=change-me&from=Acme&to=%2B447700900001&text=${encodeURIComponent(text)}&dlr-mask=3&dlr-url=${encodeURIComponent(dlr)}`;
    const res = await fetch(url);
    return `${res.status} ${await res.text()}`;
  };
  const long = `${'Kannel splits this. '.repeat(10)}End.`;
  assert.match(await sendsms(1, 'Hello from Kannel'), /^202 0: Accepted for delivery/);
  assert.match(await sendsms(2, long), /^202 0: Accepted for delivery/);
  const stored = () => f.h.ctx.store.db.selectFrom('messages').selectAll().where('account_id', '=', accountId).orderBy('body').execute();
  await waitFor(async () => (await stored()).length === 2, { message: () => `two messages stored\n${logs()}` });
  const messages = await stored();
  assert.deepEqual(
    messages.map((m) => [m.body, m.sender, m.recipient, Number(m.segments)]),
    [
      ['Hello from Kannel', 'Acme', '+447700900001', 1],
      [long, 'Acme', '+447700900001', 2],
    ],
  );
  assert.equal((await ledgerMatchesBalance(f.h.ctx, accountId)).balance, 97, 'charged 1 + 2 segments, once');

  // Pigeon drops the link; meanwhile the simulator delivers and the receipts wait in Pigeon's
  // queue. Kannel binds again by itself, gets them, and calls each dlr-url.
  for (const s of f.server.boundSessions()) s.endBind('dropped by the test');
  await f.h.workers.drain();
  f.h.clock.advance(1000);
  await f.h.workers.drain();
  const queued = Number((await f.h.ctx.store.db.selectFrom('smpp_outbox').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
  assert.ok(queued >= 2, `receipts queued while Kannel was unbound: ${queued}`);
  const delivered = (n: number) => calls.some((c) => c.pathname === '/dlr' && c.searchParams.get('n') === String(n) && c.searchParams.get('type') === '1');
  let state = '';
  await waitFor(
    async () => {
      state = JSON.stringify({
        messages: (await stored()).map((m) => [m.id, m.status]),
        outbox: await f.h.ctx.store.db.selectFrom('smpp_outbox').select(['id', 'kind', 'attempts']).execute(),
        smpp: await f.h.ctx.store.db.selectFrom('smpp_messages').selectAll().execute(),
      });
      return delivered(1) && delivered(2);
    },
    { message: () => `delivered reports at the dlr-url: ${calls.map(String).join(', ')}\n${state}\n${logs()}` },
  );

  // Inbound, short and long: the long one goes in UDH parts, which Kannel puts back together.
  const longReply = `${'A long reply through Kannel. '.repeat(8)}Bye.`;
  await receiveInbound(f.h.ctx, { from: '+447911123456', to: '+447700900777', message: 'Reply through Kannel' });
  await receiveInbound(f.h.ctx, { from: '+447911123456', to: '+447700900777', message: longReply });
  const inbound = () => calls.filter((c) => c.pathname === '/inbound').map((c) => [c.searchParams.get('from'), c.searchParams.get('to'), c.searchParams.get('text')]);
  await waitFor(() => inbound().length === 2, { message: () => `the sms-service calls: ${calls.map(String).join(', ')}\n${logs()}` });
  assert.deepEqual(
    inbound().sort(),
    [
      ['+447911123456', '+447700900777', longReply],
      ['+447911123456', '+447700900777', 'Reply through Kannel'],
    ].sort(),
  );
});
