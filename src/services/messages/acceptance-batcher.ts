/**
 * Group commit for accepting messages. Sends that arrive while a transaction is being written
 * wait for the next one, and everything waiting is written together: one transaction, one debit
 * per account, multi-row inserts. Under load this turns hundreds of small commits into a few large
 * ones (the commit, not the work in it, is what costs on both databases); with no load a send
 * still commits on its own, at once. On PostgreSQL, where each statement is a round trip, the
 * group is one statement in the common case (`pigeon_accept`, acceptance.repository.ts), and the
 * general transaction below is kept for what it cannot do: re-checking access, refusing one
 * acceptance while its neighbours go through.
 *
 * Each acceptance keeps its own outcome: one that the balance (or the account's daily cap) does
 * not cover is refused with `insufficient_credits` (or `daily_limit_reached`) while the others in
 * the same transaction go through, in arrival order.
 * If the transaction fails for any other reason, each acceptance is retried alone, so one bad
 * request can never fail its neighbours.
 */
import type { CompiledQuery, Transaction } from 'kysely';
import { AppError } from '../../errors/catalogue.ts';
import { creditsDebited, messageTransitions } from '../../metrics.ts';
import type { BatchesTable, CreditLedgerTable, Database, LinksTable, MessagesTable } from '../../store/database.ts';
import { writeLinks } from '../links/links.ts';
import type { Executor, Store } from '../../store/connect.ts';
import { enqueueJobs } from '../../store/repositories/jobs.repository.ts';
import { insertLedgerRows } from '../../store/repositories/ledger.repository.ts';
import { debitState, tryDebitWithinDailyLimit } from '../../store/repositories/account-limits.repository.ts';
import { insertBatches, insertMessages } from '../../store/repositories/messages.repository.ts';
import { insertSmppMessages, type SmppMessageRow } from '../../store/repositories/smpp-outbox.repository.ts';
import { accessRevisionInTransaction } from '../../store/repositories/api-keys.repository.ts';
import { acceptGroupInOneStatement, acceptsInOneStatement, insertBesideRows, lockAdmissionKeys, lockAdmissionKeysReadingRevision, type AcceptanceGroup, type BesideRow } from '../../store/repositories/acceptance.repository.ts';
import { retryingConflicts } from '../../store/retry-conflicts.ts';
import { newId } from '../../util/ids.ts';
import type { Context } from '../context.ts';
import { finishAll, type Finish, type StoredResponse } from './idempotency.ts';
import { observeAccessRevision } from '../auth/access-cache.ts';
import { grantRefusalNow, optOutRefusalNow } from '../auth/access.ts';
import { dailyLimitReached, destinationRefusalNow, utcDay } from '../accounts/account-limits.ts';

export interface Acceptance<R> {
  accountId: string;
  rows: MessagesTable[];
  /** What the ledger row refers to: the message id of a single send, the batch id of a bulk. */
  reference: string;
  credits: number;
  batch: { id: string; total: number } | null;
  /**
   * A dashboard campaign's batches instead of `batch`: one acceptance, so the whole campaign is
   * debited and stored all or nothing. Each batch's rows are those whose `batch_id` is its id.
   */
  campaign?: { id: string; batches: { id: string; total: number; queued: number; credits: number }[] };
  /**
   * More rows of this acceptance (a campaign's own row), written in its transaction before its
   * batches. A group with one takes the general path; if it throws, the group is retried one
   * acceptance at a time, so only this one fails.
   */
  write?: (trx: Executor) => Promise<void>;
  /**
   * Whether `write` has anything to write, asked once the group's admissions have run (a
   * verification's: only a block to announce or a response to keep). A PostgreSQL group whose
   * acceptances have nothing to write after its statement sends that statement with its COMMIT.
   * Without it, a `write` is taken to write.
   */
  writes?: () => boolean;
  /**
   * Rows of other tables written with this acceptance (a verification and its code's text), the
   * group's as one insert per table, before `write`. A group with any takes the general path.
   */
  beside?: BesideRow[];
  /**
   * A message accepted over SMPP: what its receipts need. The rows of a group are one insert, in
   * the general path or in the transaction of the one-statement path, so SMPP submits keep the
   * one statement on PostgreSQL that `write` (a round trip per acceptance) would cost them.
   */
  smppMessage?: SmppMessageRow;
  /**
   * The rows carry columns the one-statement path does not write (a Twilio-style callback's
   * `callback_format`): the group takes the general path, which inserts whole rows.
   */
  wholeRows?: boolean;
  /**
   * When the dispatch job of a held marketing message comes due (its quiet-hours release time,
   * quiet-hours-hold.ts), by message id; every other pending message's is due at once.
   */
  releaseAt?: ReadonlyMap<string, number>;
  /**
   * The rows' tracked links (DECISIONS.md §16), written before them: a code drawn twice is
   * drawn again and replaced in its row's text (links.ts). A group with links takes the general path.
   */
  links?: LinksTable[];
  /** Builds the response from the balance after this acceptance's debit. */
  respond: (remaining: number) => R;
  /** The idempotency record, written in the same transaction. */
  finish?: Finish;
  /** The access the acceptance was granted under, checked again as it commits (access-cache.ts). */
  access?: AccessGrant;
  /**
   * Decides, in the acceptance's transaction and before its debit, whether it goes in at all
   * (a verification's pending lookup and fraud guard, verify.ts): an error returned refuses this
   * acceptance alone, nothing debited or written for it. Reading there, on the writer's connection
   * and under its lock, is cheaper than on the read connection, and the group's tally lets it count
   * the acceptances admitted before it in the same transaction. A group with one takes the general path.
   */
  admit?: (trx: Executor, admission: Admission, answer: unknown) => Promise<Error | null>;
  /**
   * A read the group's admissions share: `read` is called once (after the group's locks, before
   * its admissions) with the `question` of every acceptance that names the same `read`, and each
   * `admit` gets its own answer (undefined without one). On PostgreSQL that is one statement where
   * each admission's own read was a round trip. What an earlier admission of the group writes is
   * not in the answers: `admit` counts it in the group's tally.
   */
  admitRead?: AdmissionRead;
  /**
   * What `admit` decides on, locked (on PostgreSQL) before the group's admissions until its
   * transaction ends: two transactions admitting for one key run one after the other, so the
   * second counts what the first wrote (Verify's account and number range).
   */
  admitLock?: string;
}

/** A read admissions share (`Acceptance.admitRead`). */
export interface AdmissionRead {
  /** `trx` is a transaction of `store.db`. */
  read: (trx: Executor, questions: readonly never[], store: Store) => Promise<readonly unknown[]>;
  /**
   * The same read as one statement whose rows are the answers, in the order of the questions
   * (PostgreSQL): sent in one round trip with the group's locks, where `read` would take one more.
   * Groups by `read`, as `read` does.
   */
  statement?: (trx: Executor, questions: readonly never[]) => CompiledQuery;
  question: unknown;
}

/** What an acceptance's `admit` is given. */
export interface Admission {
  /** The access revision its transaction read (null when no acceptance of the group had a grant). */
  revision: number | null;
  /** Counts the group's admissions share, by keys of their own (emptied for each transaction). */
  tally: Map<string, number>;
}

export interface AccessGrant {
  /** The access revision the key and the Sender ID were checked at. */
  revision: number;
  /** The API key; none for a submit over SMPP, whose account is checked instead. */
  keyId?: string;
  /** The Sender ID as the request named it. */
  from: string;
}

interface Waiting {
  acceptance: Acceptance<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** Thrown to roll back a transaction whose one-statement group wrote nothing. */
class TakeGeneralPath extends Error {}

/** A flush takes acceptances until it holds this many messages (a bulk is never split). */
const MAX_ROWS_PER_COMMIT = 20_000;

/** Names both numbers, and for an empty account what to do next (a new account starts at 0). */
function insufficient(credits: number, balance: number, accountId: string): AppError {
  const plural = (n: number) => `${n.toLocaleString('en')} credit${n === 1 ? '' : 's'}`;
  const hint =
    balance === 0
      ? ` The account has no credits (a new account starts with none): the operator adds them (\`pigeon credits add ${accountId} AMOUNT\`); the dashboard's Credits page shows the balance.`
      : ' Ask the operator for a top-up, or send fewer messages.';
  return new AppError('insufficient_credits', `Sending needs ${plural(credits)}; the balance is ${plural(balance)}.${hint}`);
}

/** The next group of a queue, taken off it: acceptances up to MAX_ROWS_PER_COMMIT messages (a bulk is never split). */
function takeGroup(queue: Waiting[]): Waiting[] {
  let rows = 0;
  let n = 0;
  while (n < queue.length && (n === 0 || rows + queue[n]!.acceptance.rows.length <= MAX_ROWS_PER_COMMIT)) {
    rows += queue[n]!.acceptance.rows.length;
    n++;
  }
  return queue.splice(0, n);
}

export class AcceptanceBatcher {
  #queue: Waiting[] = [];
  #running = 0;
  /** SQLite has one writer; PostgreSQL commits several transactions in parallel. */
  readonly #maxConcurrent: number;

  constructor(private readonly ctx: Context) {
    this.#maxConcurrent = ctx.store.dialect === 'postgres' ? 4 : 1;
  }

  #scheduled = false;

  /**
   * On PostgreSQL, acceptances with admissions or writes of their own (verifications) wait in a
   * lane of their own, written one group at a time: their groups lock number ranges, and two
   * groups in flight that share a range only wait for each other, where one group takes all that
   * waited meanwhile (docs/performance.md: 20-30 % more creates a second). Sends keep their four.
   */
  #admitQueue: Waiting[] = [];
  #admitRunning = false;

  accept<R>(acceptance: Acceptance<R>): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const lane = this.ctx.store.dialect === 'postgres' && (acceptance.admit || acceptance.beside || acceptance.write) && !acceptance.campaign ? this.#admitQueue : this.#queue;
      lane.push({ acceptance, resolve: resolve as (v: unknown) => void, reject });
      // Wait for the end of this turn of the event loop: the requests whose bodies arrived in it
      // are all accepted by then, and go into one transaction.
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
    if (!this.#admitRunning && this.#admitQueue.length > 0) {
      this.#admitRunning = true;
      void this.#flushGroup(takeGroup(this.#admitQueue)).finally(() => {
        this.#admitRunning = false;
        this.#pump();
      });
    }
    while (this.#running < this.#maxConcurrent && this.#queue.length > 0) {
      this.#running++;
      void this.#flush(takeGroup(this.#queue)).finally(() => {
        this.#running--;
        this.#pump();
      });
    }
  }

  async #flush(items: Waiting[]): Promise<void> {
    // On PostgreSQL the acceptances with nothing beside their messages commit in one statement;
    // those with an idempotency record or SMPP details go in a transaction of their own beside
    // them (the statement and those rows), and those with writes of their own (a campaign's; a
    // verification's have their own lane) in a third, so a few keyed requests, SMPP submits or
    // campaigns do not add their round trips to the whole group.
    if (acceptsInOneStatement(this.ctx.store.db)) {
      const kind = ({ acceptance: a }: Waiting) => (a.admit || a.beside || a.write ? 2 : a.finish || a.smppMessage ? 1 : 0);
      const groups: Waiting[][] = [[], [], []];
      for (const item of items) groups[kind(item)]!.push(item);
      await Promise.all(groups.filter((g) => g.length > 0).map((g) => this.#flushGroup(g)));
      return;
    }
    await this.#flushGroup(items);
  }

  async #flushGroup(items: Waiting[]): Promise<void> {
    let outcomes: Outcome[];
    try {
      outcomes = await this.#commitRetrying(items.map((i) => i.acceptance));
    } catch (error) {
      if (items.length === 1) {
        items[0]!.reject(error);
        return;
      }
      outcomes = [];
      for (const item of items) {
        try {
          outcomes.push(...(await this.#commitRetrying([item.acceptance])));
        } catch (err) {
          outcomes.push({ ok: false, error: err });
        }
      }
    }
    let accepted = 0;
    let scheduled = 0;
    let credits = 0;
    items.forEach((item, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) {
        for (const row of item.acceptance.rows) {
          if (row.status === 'scheduled') scheduled++;
          else accepted++;
        }
        credits += item.acceptance.credits;
        item.resolve(outcome.value);
      } else {
        item.reject(outcome.error);
      }
    });
    if (accepted > 0) {
      this.ctx.wake('dispatch');
      messageTransitions.inc({ status: 'pending' }, accepted);
    }
    if (scheduled > 0) {
      this.ctx.wake('schedule');
      messageTransitions.inc({ status: 'scheduled' }, scheduled);
    }
    if (credits > 0) creditsDebited.inc(credits);
  }

  /**
   * PostgreSQL may abort a transaction to break a deadlock or a serialisation conflict with
   * another process; it is run again (retry-conflicts.ts).
   */
  async #commitRetrying(acceptances: Acceptance<unknown>[]): Promise<Outcome[]> {
    return retryingConflicts(() => this.#commit(acceptances));
  }

  async #commit(acceptances: Acceptance<unknown>[]): Promise<Outcome[]> {
    const now = this.ctx.clock();
    // On PostgreSQL the group is one statement, one round trip, in the common case. Idempotency
    // records need the balance the debits return, so a group with any (or with SMPP details) is
    // that statement and those rows in one transaction.
    if (acceptsInOneStatement(this.ctx.store.db) && !acceptances.some((a) => a.campaign || a.wholeRows || a.releaseAt || a.links)) {
      const outcomes = acceptances.some((a) => a.admit || a.beside || a.write)
        ? await this.#commitAdmitted(acceptances, now)
        : acceptances.some((a) => a.finish || a.smppMessage)
          ? await this.#commitInOneStatementWithRecords(acceptances, now)
          : ((await this.#commitInOneStatement(this.ctx.store.db, acceptances, now))?.outcomes ?? null);
      if (outcomes) return outcomes;
    }
    return this.ctx.store.db.transaction().execute(async (trx) => {
      const { refusals, revision } = await this.#recheckAccess(trx, acceptances);
      const admission: Admission = { revision, tally: new Map() };
      const admitted = acceptances.filter((a, i) => a.admit && !refusals[i]);
      await lockAdmissionKeys(trx, admitted.flatMap((a) => (a.admitLock === undefined ? [] : [a.admitLock])));
      const answers = await this.#readForAdmissions(trx, readsOf(admitted));
      for (const [i, a] of acceptances.entries()) {
        if (a.admit && !refusals[i]) refusals[i] = await a.admit(trx, admission, answers.get(a));
      }
      const remaining = await this.#debit(trx, acceptances, refusals, now);
      const outcomes: Outcome[] = [];
      const ledger: CreditLedgerTable[] = [];
      const batches: BatchesTable[] = [];
      const messages: MessagesTable[] = [];
      const finishes: { finish: Finish; value: unknown }[] = [];
      const writes: ((trx: Executor) => Promise<void>)[] = [];
      const beside: BesideRow[] = [];
      const smpp: SmppMessageRow[] = [];
      const releaseAt = new Map<string, number>();
      const links: LinksTable[] = [];
      acceptances.forEach((a, i) => {
        const refusal = refusals[i];
        if (refusal) {
          outcomes.push({ ok: false, error: refusal });
          return;
        }
        // Every refused debit has its reason in `refusals`.
        const balance = remaining[i]!;
        ledger.push({ id: newId('led', now), account_id: a.accountId, amount: -a.credits, kind: 'debit', reference: a.reference, note: null, created_at: now });
        if (a.batch) {
          batches.push({ id: a.batch.id, account_id: a.accountId, total: a.batch.total, queued: a.rows.length, credits_used: a.credits, created_at: now, campaign_id: null });
        }
        for (const b of a.campaign?.batches ?? []) {
          batches.push({ id: b.id, account_id: a.accountId, total: b.total, queued: b.queued, credits_used: b.credits, created_at: now, campaign_id: a.campaign!.id });
        }
        messages.push(...a.rows);
        a.releaseAt?.forEach((at, id) => releaseAt.set(id, at));
        if (a.links) links.push(...a.links);
        if (a.beside) beside.push(...a.beside);
        if (a.write) writes.push(a.write);
        if (a.smppMessage) smpp.push(a.smppMessage);
        const value = a.respond(balance);
        if (a.finish) finishes.push({ finish: a.finish, value });
        outcomes.push({ ok: true, value });
      });
      if (messages.length > 0) {
        await insertLedgerRows(trx, ledger);
        await insertBesideRows(trx, beside);
        for (const write of writes) await write(trx);
        await insertSmppMessages(trx, smpp);
        await insertBatches(trx, batches);
        if (links.length > 0) await writeLinks(trx, this.ctx.config.links.baseUrl, links, messages);
        await insertMessages(trx, messages);
        // Scheduled messages get no dispatch job: the scheduler enqueues it when it releases them.
        const dispatchNow = messages.filter((m) => m.status === 'pending');
        // A held marketing message's job is due, and joins the backlog, at its release.
        await enqueueJobs(
          trx,
          dispatchNow.map((m) => {
            const at = releaseAt.get(m.id);
            return at === undefined ? { queue: 'dispatch' as const, accountId: m.account_id, ref: m.id, runAt: now } : { queue: 'dispatch' as const, accountId: m.account_id, ref: m.id, runAt: at, joinsBacklogAt: at };
          }),
          now,
        );
      }
      await finishAll(trx, finishes.map(({ finish, value }) => ({ finish, response: { status: 200, body: value } })));
      return outcomes;
    });
  }

  /** The same with the group's idempotency records and SMPP details, in one transaction; null as below. */
  async #commitInOneStatementWithRecords(acceptances: Acceptance<unknown>[], now: number): Promise<Outcome[] | null> {
    try {
      return await this.ctx.store.db.transaction().execute(async (trx) => {
        const outcomes = (await this.#commitInOneStatement(trx, acceptances, now))?.outcomes;
        // Nothing written (or a refused debit aborted the transaction): roll back, general path.
        if (!outcomes) throw new TakeGeneralPath();
        const records: { finish: Finish; response: StoredResponse }[] = [];
        for (const [i, a] of acceptances.entries()) {
          const outcome = outcomes[i]!;
          if (a.finish && outcome.ok) records.push({ finish: a.finish, response: { status: 200, body: outcome.value } });
        }
        await finishAll(trx, records);
        // A written group accepted every one of its acceptances.
        await insertSmppMessages(trx, acceptances.flatMap((a) => (a.smppMessage ? [a.smppMessage] : [])));
        return outcomes;
      });
    } catch (error) {
      if (error instanceof TakeGeneralPath) return null;
      throw error;
    }
  }

  /**
   * A PostgreSQL group with admissions, rows beside its messages or writes of its own (verifications,
   * verify.ts), in two round trips where the general path takes one per statement (some twelve):
   * BEGIN, the admissions' locks with the access revision and their shared reads, sent together
   * (pipelined-postgres.ts); then the group's statement with the rows beside it (`pigeon_accept`,
   * whose debits come last, so the account's row is locked only until the commit) and COMMIT. When
   * an acceptance has more to write (`write`, an idempotency record), those statements follow the
   * group's, and COMMIT takes a round trip of its own. Null, everything rolled back, when the
   * general path must decide: a grant older than the revision (access is checked again there) or a
   * debit refused.
   */
  async #commitAdmitted(acceptances: Acceptance<unknown>[], now: number): Promise<Outcome[] | null> {
    try {
      return await this.ctx.store.db.transaction().execute(async (trx) => {
        const reads = readsOf(acceptances.filter((a) => a.admit));
        // Each read's statement goes with the locks, in one round trip; without one, it follows them.
        const statements = [...reads].every(([, r]) => r.statement) ? [...reads].map(([, r]) => r.statement!(trx, r.questions)) : [];
        const locked = await lockAdmissionKeysReadingRevision(trx, acceptances.flatMap((a) => (a.admitLock === undefined ? [] : [a.admitLock])), statements);
        const revision = locked.revision;
        observeAccessRevision(this.ctx.store, revision);
        if (acceptances.some((a) => a.access && a.access.revision < revision)) throw new TakeGeneralPath();
        const admission: Admission = { revision, tally: new Map() };
        const answers = statements.length > 0 ? answersOf(reads, locked.rows) : await this.#readForAdmissions(trx, reads);
        const refusals: (Error | null)[] = [];
        for (const a of acceptances) refusals.push(a.admit ? await a.admit(trx, admission, answers.get(a)) : null);
        const going = acceptances.filter((_, i) => !refusals[i]);
        // With nothing to write after it, the group's statement goes with the COMMIT.
        const last = !going.some((a) => a.finish || a.smppMessage || (a.write && (a.writes?.() ?? true)));
        // The revision is read in this transaction, as the general path reads it: no grant is older.
        const group = going.length === 0 ? { outcomes: [], ended: false } : await this.#commitInOneStatement(trx, going, now, { beside: going.flatMap((a) => a.beside ?? []), accessChecked: true, commit: last });
        if (!group) throw new TakeGeneralPath();
        const written = group.outcomes;
        if (group.ended) return outcomesOf(refusals, written);
        for (const a of going) if (a.write) await a.write(trx);
        await insertSmppMessages(trx, going.flatMap((a) => (a.smppMessage ? [a.smppMessage] : [])));
        const records: { finish: Finish; response: StoredResponse }[] = [];
        going.forEach((a, i) => {
          const outcome = written[i]!;
          if (a.finish && outcome.ok) records.push({ finish: a.finish, response: { status: 200, body: outcome.value } });
        });
        await finishAll(trx, records);
        return outcomesOf(refusals, written);
      });
    } catch (error) {
      if (error instanceof TakeGeneralPath) return null;
      throw error;
    }
  }

  /**
   * The group in one statement (acceptance.repository.ts), or null when it wrote nothing because
   * an acceptance needs what only the general path does: an access re-check (a grant older than
   * the database's revision) or a refusal (a debit the balance or the daily cap does not cover).
   * With `commit` the statement may end `db`'s transaction (`ended`: acceptGroupInOneStatement).
   */
  async #commitInOneStatement(db: Executor, acceptances: Acceptance<unknown>[], now: number, opts: { beside?: BesideRow[]; accessChecked?: boolean; commit?: boolean } = {}): Promise<{ outcomes: Outcome[]; ended: boolean } | null> {
    const debits = new Map<string, { accountId: string; credits: number; messages: number }>();
    const group: AcceptanceGroup = { grantedRevision: null, day: utcDay(now), now, debits: [], ledger: [], batches: [], messages: [], jobIds: [] };
    for (const a of acceptances) {
      if (a.access && !opts.accessChecked && (group.grantedRevision === null || a.access.revision < group.grantedRevision)) group.grantedRevision = a.access.revision;
      const debit = debits.get(a.accountId) ?? { accountId: a.accountId, credits: 0, messages: 0 };
      debit.credits += a.credits;
      debit.messages += a.rows.length;
      debits.set(a.accountId, debit);
      group.ledger.push({ id: newId('led', now), accountId: a.accountId, amount: -a.credits, reference: a.reference });
      if (a.batch) {
        group.batches.push({ id: a.batch.id, account_id: a.accountId, total: a.batch.total, queued: a.rows.length, credits_used: a.credits, created_at: now });
      }
      for (const row of a.rows) {
        group.messages.push(row);
        group.jobIds.push(newId('job', now));
      }
    }
    group.debits = [...debits.values()].sort((x, y) => (x.accountId < y.accountId ? -1 : x.accountId > y.accountId ? 1 : 0));
    const result = await acceptGroupInOneStatement(db, group, opts.beside, { commit: opts.commit });
    if (result.revision !== null) observeAccessRevision(this.ctx.store, result.revision);
    if (!result.written) return null;
    // As if debited one after the other: each acceptance sees the balance after its own debit.
    const balances = new Map<string, number>();
    group.debits.forEach((d, i) => balances.set(d.accountId, result.balances[i]! + d.credits));
    const outcomes = acceptances.map((a): Outcome => {
      const balance = balances.get(a.accountId)! - a.credits;
      balances.set(a.accountId, balance);
      return { ok: true, value: a.respond(balance) };
    });
    return { outcomes, ended: result.ended };
  }

  /** The answers of the admissions' shared reads (`admitRead`), one call per read. */
  async #readForAdmissions(trx: Executor, reads: Reads): Promise<Map<Acceptance<unknown>, unknown>> {
    const results: (readonly unknown[])[] = [];
    for (const [read, { questions }] of reads) results.push(await read(trx, questions, this.ctx.store));
    return answersOf(reads, results);
  }

  /**
   * Acceptances granted under an older access revision than the one this transaction reads are
   * checked again against the database itself: a key revoked, an account suspended or a Sender ID
   * withdrawn before this commit refuses them, whatever the request saw. The revision is read
   * inside the transaction, so no change can land between the check and the commit on SQLite
   * (the write lock is held), and on PostgreSQL one that does is concurrent with the send.
   */
  async #recheckAccess(trx: Transaction<Database>, acceptances: Acceptance<unknown>[]): Promise<{ refusals: (Error | null)[]; revision: number | null }> {
    const refusals: (Error | null)[] = acceptances.map(() => null);
    if (!acceptances.some((a) => a.access)) return { refusals, revision: null };
    const revision = await accessRevisionInTransaction(trx);
    observeAccessRevision(this.ctx.store, revision);
    const verdicts = new Map<string, AppError | null>();
    const countries = new Map<string, string | null>();
    for (const [i, a] of acceptances.entries()) {
      if (!a.access || a.access.revision >= revision) continue;
      const key = `${a.access.keyId ?? ''}\u0000${a.accountId}\u0000${a.access.from}`;
      if (!verdicts.has(key)) {
        verdicts.set(key, await grantRefusalNow(trx, a.accountId, a.access));
      }
      // The account's destination list may have changed too (it moves the same revision).
      refusals[i] =
        verdicts.get(key)! ??
        (await destinationRefusalNow(trx, this.ctx.config, a.accountId, a.rows.map((r) => r.recipient), countries)) ??
        // A single send's recipient who opted out meanwhile is refused; a bulk's are failed at dispatch.
        (a.batch === null && a.rows.length === 1 ? await optOutRefusalNow(trx, a.accountId, a.rows[0]!.recipient) : null);
    }
    return { refusals, revision };
  }

  /**
   * Debits each account once for all its acceptances when the balance and the daily cap cover
   * them all, otherwise one by one in arrival order. Accounts are locked in id order, so
   * concurrent transactions on PostgreSQL never wait on each other in a cycle. Returns each
   * acceptance's balance after its own debit, or null where it was refused (the reason goes into
   * `refusals`). The cap is checked by the debit's own UPDATE: no extra query unless one is refused.
   */
  async #debit(trx: Transaction<Database>, acceptances: Acceptance<unknown>[], refusals: (Error | null)[], now: number): Promise<(number | null)[]> {
    const day = utcDay(now);
    const remaining: (number | null)[] = new Array(acceptances.length).fill(null);
    const byAccount = new Map<string, number[]>();
    acceptances.forEach((a, i) => {
      if (!refusals[i]) byAccount.set(a.accountId, [...(byAccount.get(a.accountId) ?? []), i]);
    });
    for (const accountId of [...byAccount.keys()].sort()) {
      const indexes = byAccount.get(accountId)!;
      const total = indexes.reduce((n, i) => n + acceptances[i]!.credits, 0);
      const messages = indexes.reduce((n, i) => n + acceptances[i]!.rows.length, 0);
      const after = await tryDebitWithinDailyLimit(trx, accountId, total, messages, day);
      if (after !== null) {
        // As if debited one after the other: each sees the balance after its own debit.
        let balance = after + total;
        for (const i of indexes) {
          balance -= acceptances[i]!.credits;
          remaining[i] = balance;
        }
        continue;
      }
      for (const i of indexes) {
        const a = acceptances[i]!;
        remaining[i] = await tryDebitWithinDailyLimit(trx, accountId, a.credits, a.rows.length, day);
        if (remaining[i] === null) refusals[i] = await this.#debitRefusal(trx, a, day, now);
      }
    }
    return remaining;
  }

  /** Why a debit was refused: the balance first (as before there was a cap), else the cap. */
  async #debitRefusal(trx: Transaction<Database>, a: Acceptance<unknown>, day: number, now: number): Promise<AppError> {
    const state = await debitState(trx, a.accountId, day);
    if (!state || state.credits < a.credits || state.dailyLimit === null) return insufficient(a.credits, state?.credits ?? 0, a.accountId);
    return dailyLimitReached(state.dailyLimit, state.countedToday, a.rows.length, now);
  }
}

/** Each acceptance's outcome: its refusal, or the next of those written (in order). */
function outcomesOf(refusals: readonly (Error | null)[], written: readonly Outcome[]): Outcome[] {
  let next = 0;
  return refusals.map((refusal): Outcome => (refusal ? { ok: false, error: refusal } : written[next++]!));
}

/** A group's admissions by the read they share, with that read's questions in their order. */
type Reads = Map<AdmissionRead['read'], { statement: AdmissionRead['statement']; acceptances: Acceptance<unknown>[]; questions: never[] }>;

function readsOf(admitted: readonly Acceptance<unknown>[]): Reads {
  const reads: Reads = new Map();
  for (const a of admitted) {
    if (!a.admitRead) continue;
    let r = reads.get(a.admitRead.read);
    if (!r) reads.set(a.admitRead.read, (r = { statement: a.admitRead.statement, acceptances: [], questions: [] }));
    r.acceptances.push(a);
    r.questions.push(a.admitRead.question as never);
  }
  return reads;
}

/** Each admission's answer, from its read's results (one list per read, in the order of `reads`). */
function answersOf(reads: Reads, results: readonly (readonly unknown[])[]): Map<Acceptance<unknown>, unknown> {
  const answers = new Map<Acceptance<unknown>, unknown>();
  [...reads.values()].forEach(({ acceptances }, i) => acceptances.forEach((a, j) => answers.set(a, results[i]![j])));
  return answers;
}

const batchers = new WeakMap<Store, AcceptanceBatcher>();

/** The batcher of a store: every acceptance on one store in this process goes through it. */
export function acceptanceBatcher(ctx: Context): AcceptanceBatcher {
  let batcher = batchers.get(ctx.store);
  if (!batcher) {
    batcher = new AcceptanceBatcher(ctx);
    batchers.set(ctx.store, batcher);
  }
  return batcher;
}
