/**
 * Group commit for Verify's checks, as acceptance-batcher.ts does for sends: the checks whose
 * requests arrived in one turn of the event loop are taken together, so a flood of checks pays
 * for one commit per group instead of one per check; with no load a check still commits on its
 * own, at once. No more checks are taken from a verification than it has left, whatever the group
 * holds (200 parallel wrong checks evaluate at most 5, test/api/verify.test.ts, both stores).
 *
 * On SQLite each check is its conditional UPDATE (`takeCheckIn`), one after the other in one
 * transaction, each seeing those before it. On PostgreSQL, where each statement is a round trip,
 * the checks by id are one statement (`takeChecksById`), which also spares the checks of one
 * verification from waiting on its row for each other's commits (a code is often checked a few
 * times in quick succession); a process runs one group at a time.
 *
 * A check that approves its verification or uses up its checks closes it, with its event; those
 * closes are a group commit of their own (`closeByCheck`), as every check of a code's usual life
 * (one right code) closes one: on PostgreSQL a group's closes are some six statements together,
 * where each close alone was as many.
 *
 * If a group's transaction or statement fails, each of its checks (or closes) is run again alone,
 * so one failure can never fail its neighbours.
 */
import type { Executor, Store } from '../../store/connect.ts';
import type { VerificationsTable } from '../../store/database.ts';
import { closeVerifications, takeCheckIn, takeChecksById } from '../../store/repositories/verify.repository.ts';
import { queueAccountEvents } from '../webhooks/account-events.ts';
import { retryingConflicts } from '../../store/retry-conflicts.ts';

export interface CheckToTake {
  accountId: string;
  serviceId: string;
  target: { id: string } | { recipient: string };
  now: number;
  /** The access revision the request's key was checked at, if not read for it (`takeCheckIn`). */
  granted: number | null;
}

type Outcome<O> = { ok: true; value: O } | { ok: false; error: unknown };

interface Waiting<I, O> {
  item: I;
  resolve: (value: O) => void;
  reject: (error: unknown) => void;
}

/**
 * The group commit itself: calls made in one turn of the event loop are run together by `group`,
 * one group at a time. A call alone is run by `alone`; if `group` throws, it wrote nothing, and
 * each of its calls is run alone, so one failure can never fail its neighbours.
 */
class GroupCommit<I, O> {
  #queue: Waiting<I, O>[] = [];
  #running = false;
  #scheduled = false;

  constructor(
    private readonly group: (items: I[]) => Promise<Outcome<O>[]>,
    private readonly alone: (item: I) => Promise<O>,
  ) {}

  run(item: I): Promise<O> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => {
          this.#scheduled = false;
          this.#pump();
        });
      }
    });
  }

  #pump(): void {
    if (this.#running || this.#queue.length === 0) return;
    const waiting = this.#queue.splice(0);
    this.#running = true;
    void this.#flush(waiting).finally(() => {
      this.#running = false;
      this.#pump();
    });
  }

  async #flush(waiting: Waiting<I, O>[]): Promise<void> {
    let outcomes: Outcome<O>[] | null = null;
    if (waiting.length > 1) {
      try {
        outcomes = await this.group(waiting.map((w) => w.item));
      } catch {
        outcomes = null;
      }
    }
    for (const [i, w] of waiting.entries()) {
      const outcome = outcomes ? outcomes[i]! : await settle(() => this.alone(w.item));
      if (outcome.ok) w.resolve(outcome.value);
      else w.reject(outcome.error);
    }
  }
}

async function settle<O>(run: () => Promise<O>): Promise<Outcome<O>> {
  try {
    return { ok: true, value: await run() };
  } catch (error) {
    return { ok: false, error };
  }
}

/**
 * A group of checks. On SQLite, each check's UPDATE in turn in one transaction. On PostgreSQL the
 * checks by id are one statement (`takeChecksById`, which locks their rows in id order), so they
 * take no more than one round trip and one commit together; those by number, rarer, are each
 * their own, after it, each with its own outcome.
 */
async function takeGroup(store: Store, checks: CheckToTake[]): Promise<Outcome<VerificationsTable | undefined>[]> {
  if (store.dialect !== 'postgres') {
    return store.db.transaction().execute(async (trx) => {
      const taken: Outcome<VerificationsTable | undefined>[] = [];
      for (const check of checks) taken.push({ ok: true, value: await one(trx, check) });
      return taken;
    });
  }
  const outcomes: Outcome<VerificationsTable | undefined>[] = new Array(checks.length);
  const byId = [...checks.keys()].filter((i) => 'id' in checks[i]!.target);
  if (byId.length > 0) {
    const rows = byId.map((i) => {
      const c = checks[i]!;
      return { accountId: c.accountId, serviceId: c.serviceId, id: (c.target as { id: string }).id, now: c.now, granted: c.granted };
    });
    const taken = await retryingConflicts(() => takeChecksById(store.db, rows));
    byId.forEach((i, k) => (outcomes[i] = { ok: true, value: taken[k] }));
  }
  for (const [i, check] of checks.entries()) {
    if (!('id' in check.target)) outcomes[i] = await settle(() => retryingConflicts(() => one(store.db, check)));
  }
  return outcomes;
}

const one = (db: Executor, c: CheckToTake) => takeCheckIn(db, c.accountId, c.serviceId, c.target, c.now, c.granted);

const takers = new WeakMap<Store, GroupCommit<CheckToTake, VerificationsTable | undefined>>();

/** Takes one check from the verification (`takeCheckIn`), in a group commit. */
export function takeCheck(store: Store, check: CheckToTake): Promise<VerificationsTable | undefined> {
  let taker = takers.get(store);
  if (!taker) {
    taker = new GroupCommit(
      (checks) => takeGroup(store, checks),
      (c) => retryingConflicts(() => one(store.db, c)),
    );
    takers.set(store, taker);
  }
  return taker.run(check);
}

/** A verification closed by a check (approved, or out of checks), with its event. */
export interface CloseByCheck {
  accountId: string;
  id: string;
  status: 'approved' | 'max_attempts_reached';
  now: number;
  /** The event's data (the verification as closed). */
  data: Record<string, unknown>;
}

/**
 * Closes the verifications in one transaction with their events: their UPDATE (one statement on
 * PostgreSQL), the deletion of their texts, one read of the accounts' events URLs and one insert
 * of the events and of their jobs. Each close says whether it closed its verification: not when
 * it was closed before (canceled, expired, or by a check earlier in the same group).
 */
async function closeAll(store: Store, closes: CloseByCheck[]): Promise<boolean[]> {
  return retryingConflicts(() =>
    store.db.transaction().execute(async (trx) => {
      const closed = await closeVerifications(trx, closes);
      const made = new Set<string>();
      const mine = closes.map((c) => {
        const first = closed.has(c.id) && !made.has(c.id);
        made.add(c.id);
        return first;
      });
      await queueAccountEvents(
        trx,
        closes.filter((_, i) => mine[i]).map((c) => ({ accountId: c.accountId, event: `verification.${c.status}` as const, data: c.data, now: c.now })),
      );
      return mine;
    }),
  );
}

const closers = new WeakMap<Store, GroupCommit<CloseByCheck, boolean>>();

/** Closes a verification that a check approved or used up, in a group commit; whether it did. */
export function closeByCheck(store: Store, close: CloseByCheck): Promise<boolean> {
  let closer = closers.get(store);
  if (!closer) {
    closer = new GroupCommit(
      async (closes) => (await closeAll(store, closes)).map((value) => ({ ok: true as const, value })),
      async (c) => (await closeAll(store, [c]))[0]!,
    );
    closers.set(store, closer);
  }
  return closer.run(close);
}
