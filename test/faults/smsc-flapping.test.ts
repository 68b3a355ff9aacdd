/**
 * An SMSC that flaps while 16 clients send, for real over SMPP on 127.0.0.1: binds refused for a
 * while, links dropped every second or two in the middle of the traffic, several times over.
 *
 * What must hold: sends are accepted throughout (the messages wait as `pending` while no link is
 * bound); once the SMSC steadies, the backlog drains and every stored message is `sent` (or,
 * unanswered on two links in a row, `failed` `smpp_no_response` and refunded); nothing
 * the SMSC acknowledged was submitted again (the drops here let the answers already written reach
 * Pigeon, as a clean close does; an answer lost with an abrupt reset is the one case of a
 * repeat, docs/deployment.md); the process holds no more file descriptors than before and its
 * memory does not grow flap after flap; the balance equals the ledger.
 *
 * On SQLite by default; on a PostgreSQL schema of its own under `npm run test:pg`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Store } from '../../src/store/connect.ts';
import { createCustomer } from '../helpers/customers.ts';
import { checkOutcome, startLoad } from '../helpers/fault-load.ts';
import { freePort, startPigeon, type PigeonProcess } from '../helpers/processes.ts';
import { processDatabase, serviceContext, testDialect } from '../helpers/test-store.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { TestSmsc } from '../smpp/smsc.ts';

const CREDITS = 1_000_000;
const FLAPS = 4;

describe(`an SMSC that flaps under load (${testDialect})`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-smsc-fault-'));
  const database = processDatabase('smscfault', dir);
  const smsc = new TestSmsc({ systemId: 'pigeon', password: 'secret' });
  let store: Store;
  let server: PigeonProcess | null = null;

  before(async () => {
    await smsc.listen();
    store = await database.open();
  });

  after(async () => {
    await server?.kill();
    await smsc.stop();
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('nothing lost, nothing acknowledged sent twice, no descriptors or memory leaked, the backlog drains', { timeout: 110_000 }, async () => {
    const ctx = serviceContext(store, { DATABASE_URL: database.url });
    const { accountId, key } = await createCustomer(ctx, { name: 'Fault', email: 'fault@example.com', credits: CREDITS });
    const port = await freePort();
    server = await startPigeon(['serve'], {
      DATABASE_URL: database.url,
      PORT: String(port),
      CARRIER: 'smpp',
      SMPP_HOST: '127.0.0.1',
      SMPP_PORT: String(smsc.port),
      SMPP_SYSTEM_ID: 'pigeon',
      SMPP_PASSWORD: 'secret',
      SMPP_RECONNECT_MIN_MS: '100',
      SMPP_RECONNECT_MAX_MS: '400',
      RATE_LIMIT_MAX: '1000000',
      LOG_REQUESTS: 'false',
    });
    const pid = server.child.pid!;
    const descriptors = () => readdirSync(`/proc/${pid}/fd`).length;
    const residentMiB = () => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
    const rssAfterFlap: number[] = [];
    const diagnostics = () => `binds ${smsc.binds}, refused ${smsc.bindFailures}, acknowledged ${smsc.acknowledged.length}\n${server!.output().slice(-2000)}`;
    await waitFor(() => smsc.binds === 1, { timeout: 10_000, message: diagnostics });
    const load = startLoad(`http://127.0.0.1:${port}/v1`, key);
    const acked = (n: number) => () => smsc.acknowledged.length >= n;
    let fdsBefore: number;
    try {
      await waitFor(acked(200), { timeout: 20_000, message: diagnostics });
      fdsBefore = descriptors();
      for (let flap = 0; flap < FLAPS; flap++) {
        // Binds refused while the link is dropped: Pigeon retries with its back-off.
        smsc.refuseBinds = true;
        const { binds, bindFailures } = smsc;
        smsc.dropAfter(0);
        await waitFor(() => smsc.bindFailures >= bindFailures + 2, { timeout: 10_000, message: diagnostics });
        smsc.refuseBinds = false;
        await waitFor(() => smsc.binds > binds, { timeout: 10_000, message: diagnostics });
        // Up for a moment, then dropped in the middle of the traffic.
        await waitFor(acked(smsc.acknowledged.length + 50), { timeout: 10_000, message: diagnostics });
        const again = smsc.binds;
        smsc.dropAfter(10 + flap * 7);
        await waitFor(() => smsc.binds > again, { timeout: 10_000, message: diagnostics });
        await waitFor(acked(smsc.acknowledged.length + 50), { timeout: 10_000, message: diagnostics });
        rssAfterFlap.push(residentMiB());
      }
    } finally {
      await load.stop();
    }
    // Steady now: everything accepted goes out.
    const open = async () =>
      Number(
        (await store.db.selectFrom('messages').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'pending').executeTakeFirstOrThrow()).n,
      ) === 0;
    await waitFor(open, { timeout: 30_000, interval: 200, message: diagnostics });
    await waitFor(() => descriptors() <= fdsBefore! + 2, { timeout: 5000, message: () => `descriptors: ${fdsBefore} before, ${descriptors()} after` });
    // Memory, under the same load after each flap: what a flap leaks (a session, its window, the
    // submits it held) adds up flap after flap; the heap's own growth settles after the first. On
    // SQLite the page cache fills as the file grows (about 20 MiB over this run; flat on PostgreSQL).
    const grown = rssAfterFlap.at(-1)! - rssAfterFlap[0]!;
    assert.ok(grown < 48, `resident memory after each flap: ${rssAfterFlap.map((m) => m.toFixed(0)).join(', ')} MiB`);

    const { answers } = load;
    const failed = answers.filter((a) => a.status !== 200);
    assert.deepEqual(
      failed.slice(0, 5).map((a) => `${a.status} ${a.code ?? a.error}`),
      [],
      `${failed.length} of ${answers.length} sends failed`,
    );
    const byText = new Map<string, number>();
    for (const s of smsc.acknowledged) byText.set(s.text, (byText.get(s.text) ?? 0) + 1);
    // A message whose submit went unanswered on two links in a row (two drops) is not tried a third
    // time: it fails `smpp_no_response`, refunded (docs/smpp.md, "When the link is down").
    const stored = await checkOutcome(store, { answers, submissions: byText, byText: true, finalStatus: 'sent', failedWith: ['smpp_no_response'], accountId, credits: CREDITS });
    const gaveUp = await store.db.selectFrom('messages').select('id').where('status', '=', 'failed').execute();
    assert.equal(smsc.acknowledged.length, stored - gaveUp.length, 'every acknowledged submit is one sent message');
    console.log(`# ${answers.length} sends, ${stored} messages (${gaveUp.length} failed smpp_no_response) sent once each over ${smsc.binds} binds (${smsc.bindFailures} refused); ${descriptors()} descriptors (${fdsBefore!} before); resident MiB after each flap ${rssAfterFlap.map((m) => m.toFixed(0)).join(', ')}`);
    assert.equal(await server.stop(), 0, server.output().slice(-3000));
    server = null;
  });
});
