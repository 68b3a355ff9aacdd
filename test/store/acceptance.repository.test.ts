/** One-statement acceptance (PostgreSQL's `pigeon_accept`): a group is written whole or not at all. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Store } from '../../src/store/connect.ts';
import type { BatchesTable, MessagesTable } from '../../src/store/database.ts';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { acceptGroupInOneStatement, acceptsInOneStatement, insertBesideRows, lockAdmissionKeys, lockAdmissionKeysReadingRevision, type AcceptanceGroup } from '../../src/store/repositories/acceptance.repository.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { readAccessRevision } from '../../src/store/repositories/api-keys.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { addAccount } from './fixtures.ts';

const NOW = 1_800_000_000_000;
const DAY = Math.floor(NOW / 86_400_000);

function message(id: string, accountId: string, over: Partial<MessagesTable> = {}): MessagesTable {
  return {
    id,
    account_id: accountId,
    batch_id: null,
    recipient: '+14155550100',
    sender: 'PIGEON',
    body: `body of ${id}`,
    encoding: 'GSM-7',
    segments: 1,
    status: 'pending',
    callback_url: null,
    carrier_message_id: null,
    error_code: null,
    error_message: null,
    created_at: NOW,
    sent_at: null,
    delivered_at: null,
    updated_at: NOW,
    send_at: null,
    validity_period: null,
    expires_at: null,
    ...over,
  };
}

/**
 * acc_a: one single message and a batch of two (one of them scheduled); acc_b: one message with a
 * callback and a validity period. Three credits from acc_a, two (two segments) from acc_b.
 */
function group(grantedRevision: number | null): AcceptanceGroup {
  const batch: BatchesTable = { id: 'bat_1', account_id: 'acc_a', total: 2, queued: 2, credits_used: 2, created_at: NOW };
  return {
    grantedRevision,
    day: DAY,
    now: NOW,
    debits: [
      { accountId: 'acc_a', credits: 3, messages: 3 },
      { accountId: 'acc_b', credits: 2, messages: 1 },
    ],
    ledger: [
      { id: 'led_1', accountId: 'acc_a', amount: -1, reference: 'msg_a1' },
      { id: 'led_2', accountId: 'acc_a', amount: -2, reference: 'bat_1' },
      { id: 'led_3', accountId: 'acc_b', amount: -2, reference: 'msg_b1' },
    ],
    batches: [batch],
    messages: [
      message('msg_a1', 'acc_a'),
      message('msg_a2', 'acc_a', { batch_id: 'bat_1' }),
      message('msg_a3', 'acc_a', { batch_id: 'bat_1', status: 'scheduled', send_at: NOW + 3_600_000, validity_period: 600, expires_at: NOW + 3_600_000 + 600_000 }),
      message('msg_b1', 'acc_b', { segments: 2, credits: 2, encoding: 'UCS-2', body: 'héllo ✓', callback_url: 'http://127.0.0.1:9/cb', validity_period: 60, expires_at: NOW + 60_000 }),
    ],
    jobIds: ['job_1', 'job_2', 'job_3', 'job_4'],
  };
}

async function snapshot(store: Store) {
  const db = store.db;
  const num = <T extends Record<string, unknown>>(rows: T[], keys: (keyof T)[]) => rows.map((r) => ({ ...r, ...Object.fromEntries(keys.map((k) => [k, r[k] === null ? null : Number(r[k])])) }));
  return {
    accounts: num(await db.selectFrom('accounts').select(['id', 'credits', 'daily_count', 'daily_day']).orderBy('id').execute(), ['credits', 'daily_count', 'daily_day']),
    ledger: num(await db.selectFrom('credit_ledger').select(['id', 'account_id', 'amount', 'kind', 'reference', 'note', 'created_at']).orderBy('id').execute(), ['amount', 'created_at']),
    batches: num(await db.selectFrom('batches').selectAll().orderBy('id').execute(), ['total', 'queued', 'credits_used', 'created_at']),
    messages: num(await db.selectFrom('messages').selectAll().orderBy('id').execute(), [
      'segments',
      'created_at',
      'updated_at',
      'sent_at',
      'delivered_at',
      'send_at',
      'validity_period',
      'expires_at',
    ]),
    jobs: num(await db.selectFrom('jobs').select(['id', 'queue', 'account_id', 'ref', 'payload', 'run_at', 'attempts', 'created_at']).orderBy('id').execute(), ['run_at', 'attempts', 'created_at']),
  };
}

async function accounts(store: Store, a: { credits: number; daily_message_limit?: number | null; daily_count?: number; daily_day?: number }) {
  await addAccount(store, 'acc_a', { credits: a.credits, daily_message_limit: a.daily_message_limit ?? null, daily_count: a.daily_count ?? 0, daily_day: a.daily_day ?? 0 });
  await addAccount(store, 'acc_b', { credits: 10 });
}

function verification(id: string, recipient: string) {
  return {
    id, account_id: 'acc_1', service_id: 'vsv_1', recipient, range_prefix: recipient.slice(0, -3), country: 'GB', code_hash: 'h', status: 'pending' as const,
    sends: 1, checks_left: 5, message_id: `msg_${id}`, credits_used: 1, last_sent_at: NOW, expires_at: NOW + 600_000, created_at: NOW, updated_at: NOW,
  };
}

/** A verification and its text for each of `n` numbers, as Acceptance.beside gives them. */
function besideRows(n: number) {
  return Array.from({ length: n }, (_, i) => {
    const id = `ver_${String(i).padStart(5, '0')}`;
    return [
      { table: 'verifications' as const, row: verification(id, `+4477009${String(i).padStart(5, '0')}`) },
      { table: 'verify_texts' as const, row: { message_id: `msg_${id}`, verification_id: id, body: `code ${i}` } },
    ];
  }).flat();
}

describe('acceptance repository', () => {
  forEachDialect((dialect, open) => {
    it(`writes groups in one statement on PostgreSQL only (${dialect}: ${dialect === 'postgres'})`, async () => {
      const store = await open();
      assert.equal(acceptsInOneStatement(store.db), dialect === 'postgres');
    });

    it('rows beside a group go in one insert per table, each table’s rows in order', async () => {
      const store = await open();
      await store.db.transaction().execute((trx) =>
        insertBesideRows(trx, [
          { table: 'verifications', row: verification('ver_1', '+447700900001') },
          { table: 'verify_texts', row: { message_id: 'msg_ver_1', verification_id: 'ver_1', body: 'code 1' } },
          { table: 'verifications', row: verification('ver_2', '+447700900002') },
          { table: 'verify_texts', row: { message_id: 'msg_ver_2', verification_id: 'ver_2', body: 'code 2' } },
        ]),
      );
      assert.deepEqual((await store.db.selectFrom('verifications').select(['id', 'recipient']).orderBy('id').execute()).map((r) => [r.id, r.recipient]), [['ver_1', '+447700900001'], ['ver_2', '+447700900002']]);
      assert.deepEqual((await store.db.selectFrom('verify_texts').select(['message_id', 'body']).orderBy('message_id').execute()).map((r) => [r.message_id, r.body]), [['msg_ver_1', 'code 1'], ['msg_ver_2', 'code 2']]);
      await store.db.transaction().execute((trx) => insertBesideRows(trx, []));
    });

    it(`admission keys are locked until the transaction ends (${dialect === 'postgres' ? 'a second transaction waits, and the reads sent with its lock see what the first committed' : 'SQLite: nothing to lock'})`, async () => {
      const store = await open();
      const key = `acc_${randomBytes(6).toString('hex')}:+447700900`;
      const written = `ver_${randomBytes(6).toString('hex')}`;
      if (dialect !== 'postgres') {
        await store.db.transaction().execute((trx) => lockAdmissionKeys(trx, [key]));
        return;
      }
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const firstLocked = new Promise<void>((resolve) => (locked = resolve));
      const order: string[] = [];
      const first = store.db.transaction().execute(async (trx) => {
        await lockAdmissionKeys(trx, [key, `${key}1`, key]);
        await insertBesideRows(trx, [{ table: 'verifications', row: verification(written, '+447700900009') }]);
        locked();
        await held;
      });
      await firstLocked;
      // The admitting transaction's first statement (the lock and the access revision) takes the same
      // lock; the read sent with it in the same round trip runs once the lock is held, so it sees
      // what the first transaction committed (a read in the lock's own statement would not).
      let revision: number | undefined;
      let read: unknown[][] = [];
      const second = store.db.transaction().execute(async (trx) => {
        const seen = trx.selectFrom('verifications').select('id').where('id', '=', written).compile();
        ({ revision, rows: read } = await lockAdmissionKeysReadingRevision(trx, [`${key}2`, key], [seen, seen]));
        order.push('second locked');
      });
      try {
        // PostgreSQL shows the second transaction waiting on that very key.
        await waitFor(
          async () => {
            const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_locks where locktype = 'advisory' and objsubid = 2 and not granted
              and objid::bigint = (hashtext(${key})::bigint & 4294967295)`.execute(store.db);
            return rows[0]!.n > 0;
          },
          { timeout: 10_000, message: 'the second transaction to wait for the first one’s lock' },
        );
        order.push('first ends');
      } finally {
        release();
        await Promise.all([first, second]);
      }
      assert.deepEqual(order, ['first ends', 'second locked']);
      assert.equal(revision, await readAccessRevision(store));
      assert.deepEqual(read, [[{ id: written }], [{ id: written }]]);
    });

    if (dialect !== 'postgres') return;

    it('plans the rest of an admitting transaction generically, and that transaction alone', async () => {
      const store = await open();
      const setting = sql<{ mode: string }>`select current_setting('plan_cache_mode') as mode`;
      let before = '';
      const modes = await store.db.connection().execute(async (conn) => {
        before = (await setting.execute(conn)).rows[0]!.mode;
        const inside = await conn.transaction().execute(async (trx) => {
          const sentWith = setting.compile(trx);
          const { rows } = await lockAdmissionKeysReadingRevision(trx, ['acc_plans:+4477009'], [sentWith]);
          const after = await setting.execute(trx);
          return [(rows[0]![0] as { mode: string }).mode, after.rows[0]!.mode];
        });
        // The same connection, its transaction over: the server's own setting again.
        return [...inside, (await setting.execute(conn)).rows[0]!.mode];
      });
      assert.notEqual(before, 'force_generic_plan');
      assert.deepEqual(modes, ['force_generic_plan', 'force_generic_plan', before]);
    });

    it('writes a whole group: debits and daily counts, ledger, batches, messages, and jobs only for pending messages', async () => {
      const store = await open();
      await accounts(store, { credits: 5, daily_message_limit: 10, daily_count: 7, daily_day: DAY - 1 });
      const revision = await readAccessRevision(store);
      const result = await acceptGroupInOneStatement(store.db, group(revision));
      assert.deepEqual(result, { written: true, revision, balances: [2, 8], ended: false });
      const after = await snapshot(store);
      // Yesterday's count does not count today: today's starts at this group's messages.
      assert.deepEqual(after.accounts, [
        { id: 'acc_a', credits: 2, daily_count: 3, daily_day: DAY },
        { id: 'acc_b', credits: 8, daily_count: 1, daily_day: DAY },
      ]);
      assert.deepEqual(after.ledger, [
        { id: 'led_1', account_id: 'acc_a', amount: -1, kind: 'debit', reference: 'msg_a1', note: null, created_at: NOW },
        { id: 'led_2', account_id: 'acc_a', amount: -2, kind: 'debit', reference: 'bat_1', note: null, created_at: NOW },
        { id: 'led_3', account_id: 'acc_b', amount: -2, kind: 'debit', reference: 'msg_b1', note: null, created_at: NOW },
      ]);
      assert.deepEqual(after.batches, [{ id: 'bat_1', account_id: 'acc_a', total: 2, queued: 2, credits_used: 2, created_at: NOW, campaign_id: null }]);
      // Every column as given, the scheduled message with its send_at, validity and expiry.
      // `credits` (migration 022) is written as given, null where the row has none; no route has taken them (023).
      assert.deepEqual(after.messages, group(revision).messages.map((m) => ({ ...m, charged: 1, credits: m.credits ?? null, callback_format: m.callback_format ?? null, callback_events: m.callback_events ?? null, route: null, route_cost: null, routes_tried: null, category: m.category ?? null, held_until: m.held_until ?? null })));
      // The scheduled message (msg_a3) has no job; the others are due now, named by their account.
      assert.deepEqual(after.jobs, [
        { id: 'job_1', queue: 'dispatch', account_id: 'acc_a', ref: 'msg_a1', payload: null, run_at: NOW, attempts: 0, created_at: NOW },
        { id: 'job_2', queue: 'dispatch', account_id: 'acc_a', ref: 'msg_a2', payload: null, run_at: NOW, attempts: 0, created_at: NOW },
        { id: 'job_4', queue: 'dispatch', account_id: 'acc_b', ref: 'msg_b1', payload: null, run_at: NOW, attempts: 0, created_at: NOW },
      ]);
    });

    it('writes the rows beside a group in its statement, and none of them when a debit is refused', async () => {
      const store = await open();
      await accounts(store, { credits: 5 });
      const revision = await readAccessRevision(store);
      const counts = async () => [Number((await store.db.selectFrom('verifications').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n), Number((await store.db.selectFrom('verify_texts').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n)];
      // Outside a transaction: the one statement writes all or nothing on its own.
      assert.deepEqual(await acceptGroupInOneStatement(store.db, group(revision), besideRows(2)), { written: true, revision, balances: [2, 8], ended: false });
      assert.deepEqual(await counts(), [2, 2]);
      assert.deepEqual((await store.db.selectFrom('verify_texts').select(['message_id', 'body']).orderBy('message_id').execute()).map((r) => [r.message_id, r.body]), [['msg_ver_00000', 'code 0'], ['msg_ver_00001', 'code 1']]);
      // The same again finds 2 credits on acc_a where it needs 3: nothing of it, beside rows included.
      const again = group(revision);
      again.ledger = again.ledger.map((l) => ({ ...l, id: `${l.id}_2` }));
      again.batches = again.batches.map((b) => ({ ...b, id: 'bat_2' }));
      again.messages = again.messages.map((m) => ({ ...m, id: `${m.id}_2`, batch_id: m.batch_id && 'bat_2' }));
      again.jobIds = again.jobIds.map((j) => `${j}_2`);
      const more = besideRows(4).slice(4);
      assert.deepEqual(await acceptGroupInOneStatement(store.db, again, more), { written: false, revision: null, reason: 'refused', ended: false });
      assert.deepEqual(await counts(), [2, 2]);
    });

    it('rows beside a group that one statement cannot bind go after it, in its transaction', async () => {
      const store = await open();
      await accounts(store, { credits: 5 });
      // 2,000 verifications of 16 columns: more parameters than one statement takes.
      const rows = besideRows(2_000);
      const result = await store.db.transaction().execute((trx) => acceptGroupInOneStatement(trx, group(null), rows));
      assert.equal(result.written, true);
      assert.equal(Number((await store.db.selectFrom('verifications').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n), 2_000);
      assert.equal(Number((await store.db.selectFrom('verify_texts').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n), 2_000);
    });

    it('with `commit`, the statement ends its transaction: committed when written, rolled back when a debit is refused', async () => {
      const store = await open();
      await accounts(store, { credits: 5 });
      const counts = async () => Number((await store.db.selectFrom('verifications').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
      let after: unknown;
      const result = await store.db.transaction().execute(async (trx) => {
        const r = await acceptGroupInOneStatement(trx, group(null), besideRows(2), { commit: true });
        // The transaction is over: a statement after it would run outside it, so it is refused.
        after = await sql`select 1`.execute(trx).catch((e: Error) => e.message);
        return r;
      });
      assert.deepEqual(result, { written: true, revision: await readAccessRevision(store), balances: [2, 8], ended: true });
      assert.match(String(after), /committed with its last statement/);
      assert.equal(await counts(), 2);
      // acc_a has 2 credits where the group needs 3: the COMMIT sent behind it rolls everything back,
      // the verification written earlier in the same transaction included.
      const again = group(null);
      again.ledger = again.ledger.map((l) => ({ ...l, id: `${l.id}_2` }));
      again.batches = again.batches.map((b) => ({ ...b, id: 'bat_2' }));
      again.messages = again.messages.map((m) => ({ ...m, id: `${m.id}_2`, batch_id: m.batch_id && 'bat_2' }));
      again.jobIds = again.jobIds.map((j) => `${j}_2`);
      const before = await snapshot(store);
      const refused = await store.db.transaction().execute(async (trx) => {
        await insertBesideRows(trx, besideRows(3).slice(4));
        return acceptGroupInOneStatement(trx, again, besideRows(4).slice(6), { commit: true });
      });
      assert.deepEqual(refused, { written: false, revision: null, reason: 'refused', ended: true });
      assert.deepEqual(await snapshot(store), before);
      assert.equal(await counts(), 2);
      // Under a grant (a group that may write nothing and succeed) the caller's transaction goes on.
      await store.db.transaction().execute(async (trx) => {
        const granted = group(await readAccessRevision(store));
        granted.messages = [];
        granted.jobIds = [];
        granted.batches = [];
        granted.ledger = [];
        granted.debits = [];
        assert.equal((await acceptGroupInOneStatement(trx, granted, [], { commit: true })).ended, false);
        await sql`select 1`.execute(trx);
      });
    });

    it('writes a group granted under no revision, and counts on from the same day', async () => {
      const store = await open();
      await accounts(store, { credits: 3, daily_message_limit: 5, daily_count: 2, daily_day: DAY });
      const result = await acceptGroupInOneStatement(store.db, group(null));
      assert.deepEqual(result, { written: true, revision: await readAccessRevision(store), balances: [0, 8], ended: false });
      assert.deepEqual((await snapshot(store)).accounts[0], { id: 'acc_a', credits: 0, daily_count: 5, daily_day: DAY });
    });

    it('writes nothing when access changed since the grant, and returns the newer revision', async () => {
      const store = await open();
      await accounts(store, { credits: 5 });
      const granted = await readAccessRevision(store);
      await store.db.updateTable('access_revision').set({ value: granted + 1 }).where('id', '=', 1).execute();
      const before = await snapshot(store);
      assert.deepEqual(await acceptGroupInOneStatement(store.db, group(granted)), { written: false, revision: granted + 1, reason: 'stale', ended: false });
      assert.deepEqual(await snapshot(store), before);
      // Granted under the current revision, the same group is written.
      assert.equal((await acceptGroupInOneStatement(store.db, group(granted + 1))).written, true);
    });

    it('writes nothing at all when one debit is refused by the balance', async () => {
      const store = await open();
      // acc_a's debit (the first) passes; acc_b's cannot: the first is undone with everything else.
      await addAccount(store, 'acc_a', { credits: 5 });
      await addAccount(store, 'acc_b', { credits: 1 });
      const before = await snapshot(store);
      assert.deepEqual(await acceptGroupInOneStatement(store.db, group(await readAccessRevision(store))), { written: false, revision: null, reason: 'refused', ended: false });
      assert.deepEqual(await snapshot(store), before);
    });

    it('writes nothing at all when the daily cap would be passed', async () => {
      const store = await open();
      await accounts(store, { credits: 100, daily_message_limit: 5, daily_count: 3, daily_day: DAY });
      const before = await snapshot(store);
      assert.deepEqual(await acceptGroupInOneStatement(store.db, group(await readAccessRevision(store))), { written: false, revision: null, reason: 'refused', ended: false });
      assert.deepEqual(await snapshot(store), before);
    });

    it('concurrent groups on the same credits: exactly one is written', async () => {
      const store = await open();
      await accounts(store, { credits: 3 });
      const revision = await readAccessRevision(store);
      const second = group(revision);
      const rename = (id: string) => `${id}_2`;
      second.ledger = second.ledger.map((l) => ({ ...l, id: rename(l.id) }));
      second.batches = second.batches.map((b) => ({ ...b, id: rename(b.id) }));
      second.messages = second.messages.map((m) => ({ ...m, id: rename(m.id), batch_id: m.batch_id && rename(m.batch_id) }));
      second.jobIds = second.jobIds.map(rename);
      const results = await Promise.all([acceptGroupInOneStatement(store.db, group(revision)), acceptGroupInOneStatement(store.db, second)]);
      assert.deepEqual(results.map((r) => r.written).sort(), [false, true]);
      const after = await snapshot(store);
      assert.equal(after.accounts[0]!.credits, 0);
      assert.equal(after.messages.length, 4);
      assert.equal(after.ledger.length, 3);
      assert.equal(after.jobs.length, 3);
    });
  });
});
