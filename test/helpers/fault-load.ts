/**
 * The load and the checks the fault tests (test/faults/) share: clients sending singles and
 * bulks over HTTP to a `pigeon serve` while the test breaks what it stands on, every answer
 * recorded; afterwards, from the database and the simulator's submission log, that every
 * accepted message reached its final state and went to the carrier exactly once, and that the
 * balance equals the ledger.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import type { Store } from '../../src/store/connect.ts';

export const BULK_SIZE = 5;

export interface Answer {
  n: number;
  bulk: boolean;
  /** null when no HTTP answer came (refused, reset, timed out). */
  status: number | null;
  code?: string;
  retryAfter?: string | null;
  /** Why no answer came. */
  error?: string;
  ms: number;
  messageIds: string[];
}

export interface Load {
  answers: Answer[];
  /** Answers so far that match. */
  count(match: (a: Answer) => boolean): number;
  stop(): Promise<void>;
}

function recipient(n: number): string {
  // 3000-3996: none of the simulator's special endings, so every message ends up delivered.
  return `+1415${String(n % 1000).padStart(3, '0')}${3000 + (n % 997)}`;
}

/**
 * `clients` loops sending to `baseUrl` (…/v1) with `key` until stopped: three singles, then a
 * bulk. Requests are numbered from `first` (give each of several loads its own range).
 */
export function startLoad(baseUrl: string, key: string, opts: { clients?: number; first?: number } = {}): Load {
  const clients = opts.clients ?? 16;
  const answers: Answer[] = [];
  let next = opts.first ?? 0;
  let running = true;
  const client = async () => {
    while (running) {
      const n = next++;
      const bulk = n % 4 === 3;
      const body = bulk
        ? { from: 'Acme', messages: Array.from({ length: BULK_SIZE }, (_, k) => ({ to: recipient(n + k), message: `fault ${n}.${k}` })) }
        : { to: recipient(n), from: 'Acme', message: `fault ${n}` };
      const started = Date.now();
      const answer: Answer = { n, bulk, status: null, ms: 0, messageIds: [] };
      try {
        const res = await fetch(`${baseUrl}${bulk ? '/sms/bulk' : '/sms/send'}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(40_000),
        });
        const json = (await res.json()) as any;
        answer.status = res.status;
        answer.retryAfter = res.headers.get('retry-after');
        if (res.status === 200) answer.messageIds = bulk ? json.messages.map((m: { message_id: string }) => m.message_id) : [json.message_id];
        else answer.code = json.code;
      } catch (err) {
        answer.error = String(err);
      }
      answer.ms = Date.now() - started;
      answers.push(answer);
      // A refused request is retried by a real client after a pause; a short one keeps the load on.
      if (answer.status !== 200) await sleep(20);
    }
  };
  const loops = Array.from({ length: clients }, client);
  return {
    answers,
    count: (match) => answers.filter(match).length,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** Waits until no dispatch or receipt job is left and no message is still on its way. */
export async function settled(store: Store): Promise<boolean> {
  const jobs = await store.db.selectFrom('jobs').select((eb) => eb.fn.countAll<number>().as('n')).where('queue', 'in', ['dispatch', 'receipt']).executeTakeFirstOrThrow();
  if (Number(jobs.n) > 0) return false;
  const open = await store.db.selectFrom('messages').select((eb) => eb.fn.countAll<number>().as('n')).where('status', 'in', ['pending', 'sent']).executeTakeFirstOrThrow();
  return Number(open.n) === 0;
}

/** How many times the simulator was handed each message id (`SIM_LOG_FILE`). */
export function simulatorSubmissions(simLog: string): Map<string, number> {
  const submissions = new Map<string, number>();
  for (const id of existsSync(simLog) ? readFileSync(simLog, 'utf8').split('\n').filter(Boolean) : []) submissions.set(id, (submissions.get(id) ?? 0) + 1);
  return submissions;
}

/**
 * The invariants after a fault: every message stored (answered 200 or not) reached `finalStatus`
 * (by default `delivered`) and was submitted exactly once (`submissions`: by message id, or by
 * text with `byText`), or, where `failedWith` allows, failed with one of those codes, refunded,
 * never taken by the carrier; every 200's messages are stored; a request has all its messages or
 * none; the balance equals the ledger and the messages charged. Returns the number of messages.
 */
export async function checkOutcome(
  store: Store,
  opts: { answers: Answer[]; submissions: Map<string, number>; byText?: boolean; finalStatus?: string; failedWith?: string[]; accountId: string; credits: number },
): Promise<number> {
  const finalStatus = opts.finalStatus ?? 'delivered';
  const messages = await store.db.selectFrom('messages').select(['id', 'body', 'status', 'segments', 'error_code']).execute();
  const submissions = opts.byText ? new Map(messages.map((m) => [m.id, opts.submissions.get(m.body) ?? 0])) : opts.submissions;
  const twice = messages.filter((m) => (submissions.get(m.id) ?? 0) > 1);
  assert.deepEqual(
    twice.map((m) => `${m.id} submitted ${submissions.get(m.id)} times`),
    [],
    'a message the carrier accepted was submitted again',
  );
  const byId = new Map(messages.map((m) => [m.id, m]));
  for (const m of messages) {
    if (m.status === 'failed' && opts.failedWith?.includes(m.error_code ?? '')) {
      assert.equal(submissions.get(m.id) ?? 0, 0, `${m.id} failed ${m.error_code}, yet the carrier took it`);
      continue;
    }
    assert.equal(m.status, finalStatus, `${m.id} is ${m.status}${m.error_code ? ` (${m.error_code})` : ''}`);
    assert.equal(submissions.get(m.id), 1, `${m.id} never reached the carrier`);
  }
  const perRequest = new Map<number, number>();
  for (const m of messages) {
    const n = Number(/^fault (\d+)/.exec(m.body)?.[1]);
    perRequest.set(n, (perRequest.get(n) ?? 0) + 1);
  }
  for (const a of opts.answers) {
    for (const id of a.messageIds) assert.ok(byId.has(id), `request ${a.n} was answered ${id}, which is not stored`);
    const stored = perRequest.get(a.n) ?? 0;
    assert.ok(stored === 0 || stored === (a.bulk ? BULK_SIZE : 1), `request ${a.n} has ${stored} messages`);
    if (a.status === 200) assert.equal(stored, a.messageIds.length, `request ${a.n}`);
  }
  const balance = Number((await store.db.selectFrom('accounts').select('credits').where('id', '=', opts.accountId).executeTakeFirstOrThrow()).credits);
  const ledger = await store.db
    .selectFrom('credit_ledger')
    .select(sql<string>`coalesce(sum(amount), 0)`.as('sum'))
    .where('account_id', '=', opts.accountId)
    .executeTakeFirstOrThrow();
  // A message failed before the carrier took it was refunded.
  const segments = messages.reduce((n, m) => n + (m.status === 'failed' ? 0 : m.segments), 0);
  assert.equal(Number(ledger.sum), balance, 'balance vs ledger');
  assert.equal(balance, opts.credits - segments, 'balance vs stored messages');
  return messages.length;
}

/**
 * What every fault must leave the clients with: each request answered 200, or 503 with the
 * fault's code and Retry-After; never a 500, a reset or another status.
 */
export function assertOnlyOkOrUnavailable(answers: Answer[], code: string, retryAfter: string): void {
  const others = answers.filter((a) => a.status !== 200 && a.status !== 503);
  assert.deepEqual(
    others.slice(0, 5).map((a) => `${a.status} ${a.code ?? a.error}`),
    [],
    `${others.length} requests answered neither 200 nor 503`,
  );
  for (const a of answers.filter((x) => x.status === 503)) {
    assert.equal(a.code, code);
    assert.equal(a.retryAfter, retryAfter);
  }
}

/** Unmounts a test's file system; with a file still open (a failed run's child), detaches it now, freed when that closes. */
export function unmount(path: string): void {
  try {
    execFileSync('umount', [path]);
  } catch {
    execFileSync('umount', ['-l', path]);
  }
}

/** `/ready` of the server at `base`: its status and what each check says. */
export async function readiness(base: string): Promise<{ status: number; json: { checks: Record<string, string> } }> {
  const res = await fetch(`${base}/ready`, { signal: AbortSignal.timeout(15_000) });
  return { status: res.status, json: (await res.json()) as { checks: Record<string, string> } };
}
