/**
 * Scheduled release across processes, on the test's database (a SQLite file shared by the
 * processes, or PostgreSQL under `npm run test:pg`): one API process (`serve --no-workers`) and
 * three worker processes (`worker`), each with its own scheduler, share one database. Four
 * campaigns are scheduled for the same instant a few seconds ahead; one worker is killed with
 * SIGKILL right at that instant. Afterwards every message was submitted exactly once (none released
 * twice by racing schedulers; a released message is re-submitted only within the killed worker's
 * leased dispatch batch), none before its time, and every balance equals its ledger.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import type { Store } from '../../src/store/connect.ts';
import type { Context } from '../../src/services/context.ts';
import { createCustomer } from '../helpers/customers.ts';
import { freePort, startPigeon, type PigeonProcess } from '../helpers/processes.ts';
import { processDatabase, serviceContext, testDialect } from '../helpers/test-store.ts';

const BULKS = 4;
const BULK_SIZE = 1000;
const CREDITS = 10_000;
const LEAD_MS = 6000;

describe(`scheduled release with three worker processes on ${testDialect === 'postgres' ? 'PostgreSQL' : 'one SQLite file'}`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-mps-'));
  const database = processDatabase('mps', dir);
  const processes: PigeonProcess[] = [];
  let store: Store;
  let ctx: Context;

  before(async () => {
    store = await database.open();
    ctx = serviceContext(store, { DATABASE_URL: database.url });
  });

  after(async () => {
    for (const p of processes) await p.kill();
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('4,000 due at once, a worker killed at that instant: each released and submitted once, none early', { timeout: 300_000 }, async () => {
    const { accountId, key } = await createCustomer(ctx, { name: 'Campaigns', email: 'c@mps.test', credits: CREDITS, label: 'mps' });

    const common = { DATABASE_URL: database.url, SIM_DELIVERY_DELAY_MS: '200', JOB_LEASE_MS: '3000', RATE_LIMIT_MAX: '1000000' };
    const port = await freePort();
    const logs = [0, 1, 2].map((i) => join(dir, `sim-${i}.log`));
    // Started side by side; each is tracked as soon as it is up, to be stopped after a failure.
    const start = async (args: string[], env: Record<string, string>) => {
      const p = await startPigeon(args, { ...common, ...env });
      processes.push(p);
      return p;
    };
    const [, ...workers] = await Promise.all([start(['serve', '--no-workers'], { PORT: String(port) }), ...logs.map((log) => start(['worker'], { SIM_LOG_FILE: log }))]);

    const sendAt = Date.now() + LEAD_MS;
    const ids: string[] = [];
    for (let b = 0; b < BULKS; b++) {
      const messages = Array.from({ length: BULK_SIZE }, (_, k) => ({ to: `+1415${String(b).padStart(3, '0')}${String(3000 + k).padStart(4, '0')}`, message: `Campaign ${b} #${k}` }));
      const res = await fetch(`http://127.0.0.1:${port}/v1/sms/bulk`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ from: 'Acme', send_at: new Date(sendAt).toISOString(), messages }),
      });
      assert.equal(res.status, 200, await res.clone().text());
      const body = (await res.json()) as { queued: number; messages: { message_id: string }[] };
      assert.equal(body.queued, BULK_SIZE);
      ids.push(...body.messages.map((m) => m.message_id));
    }
    assert.ok(Date.now() < sendAt - 1000, 'scheduled well ahead of the time');
    const early = await store.db.selectFrom('messages').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '!=', 'scheduled').executeTakeFirstOrThrow();
    assert.equal(Number(early.n), 0, 'nothing released before its time');

    await new Promise((resolve) => setTimeout(resolve, Math.max(0, sendAt - Date.now())));
    await workers[0]!.kill('SIGKILL');

    const deadline = Date.now() + 120_000;
    for (;;) {
      const left = await store.db
        .selectFrom('messages')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('status', 'in', ['scheduled', 'pending'])
        .executeTakeFirstOrThrow();
      const jobs = await store.db.selectFrom('jobs').select((eb) => eb.fn.countAll<number>().as('n')).where('queue', '=', 'dispatch').executeTakeFirstOrThrow();
      if (Number(left.n) === 0 && Number(jobs.n) === 0) break;
      assert.ok(Date.now() < deadline, `still ${left.n} scheduled or pending`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }

    const rows = await store.db.selectFrom('messages').select(['id', 'status', 'sent_at', 'send_at']).execute();
    assert.equal(rows.length, BULKS * BULK_SIZE);
    for (const m of rows) {
      assert.ok(m.status === 'sent' || m.status === 'delivered', `${m.id} is ${m.status}`);
      assert.ok(Number(m.sent_at) >= Number(m.send_at), `${m.id} went out before its time`);
    }

    // Each message reached the carrier once, except within the killed worker's leased batch.
    const seen = new Map<string, number>();
    for (const log of logs) {
      if (!existsSync(log)) continue;
      for (const id of readFileSync(log, 'utf8').split('\n').filter(Boolean)) seen.set(id, (seen.get(id) ?? 0) + 1);
    }
    for (const id of ids) assert.ok((seen.get(id) ?? 0) >= 1, `${id} never reached the carrier`);
    const killedSaw = new Set(existsSync(logs[0]!) ? readFileSync(logs[0]!, 'utf8').split('\n').filter(Boolean) : []);
    for (const [id, n] of seen) if (n > 1) assert.ok(killedSaw.has(id), `${id} was submitted twice without the killed worker`);
    const dispatchJobsEver = await store.db.selectFrom('jobs').select('id').where('queue', '=', 'dispatch').execute();
    assert.deepEqual(dispatchJobsEver, []);

    const balance = await store.db.selectFrom('accounts').select('credits').where('id', '=', accountId).executeTakeFirstOrThrow();
    const ledger = await store.db.selectFrom('credit_ledger').select(sql<string>`coalesce(sum(amount), 0)`.as('sum')).where('account_id', '=', accountId).executeTakeFirstOrThrow();
    assert.equal(Number(balance.credits), CREDITS - BULKS * BULK_SIZE);
    assert.equal(Number(ledger.sum), Number(balance.credits));

    for (const p of processes) if (p !== workers[0]) assert.equal(await p.stop(), 0, p.output().slice(-2000));
  });
});
