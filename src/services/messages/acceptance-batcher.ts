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
import type { Transaction } from 'kysely';
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
import { acceptGroupInOneStatement, acceptsInOneStatement, type AcceptanceGroup } from '../../store/repositories/acceptance.repository.ts';
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

export class AcceptanceBatcher {
  #queue: Waiting[] = [];
  #running = 0;
  /** SQLite has one writer; PostgreSQL commits several transactions in parallel. */
  readonly #maxConcurrent: number;

  constructor(private readonly ctx: Context) {
    this.#maxConcurrent = ctx.store.dialect === 'postgres' ? 4 : 1;
  }

  #scheduled = false;

  accept<R>(acceptance: Acceptance<R>): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#queue.push({ acceptance, resolve: resolve as (v: unknown) => void, reject });
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
    while (this.#running < this.#maxConcurrent && this.#queue.length > 0) {
      let rows = 0;
      let n = 0;
      while (n < this.#queue.length && (n === 0 || rows + this.#queue[n]!.acceptance.rows.length <= MAX_ROWS_PER_COMMIT)) {
        rows += this.#queue[n]!.acceptance.rows.length;
        n++;
      }
      const items = this.#queue.splice(0, n);
      this.#running++;
      void this.#flush(items).finally(() => {
        this.#running--;
        this.#pump();
      });
    }
  }

  async #flush(items: Waiting[]): Promise<void> {
    // On PostgreSQL the acceptances with nothing beside their messages commit in one statement;
    // those with an idempotency record or SMPP details go in a transaction of their own beside
    // them (the statement and those rows), so a few keyed requests or SMPP submits do not add
    // BEGIN and COMMIT round trips to the whole group.
    if (acceptsInOneStatement(this.ctx.store.db)) {
      const besides = (i: Waiting) => Boolean(i.acceptance.finish || i.acceptance.smppMessage);
      const withRows = items.filter(besides);
      if (withRows.length > 0 && withRows.length < items.length) {
        await Promise.all([this.#flushGroup(items.filter((i) => !besides(i))), this.#flushGroup(withRows)]);
        return;
      }
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
    if (acceptsInOneStatement(this.ctx.store.db) && !acceptances.some((a) => a.campaign || a.write || a.wholeRows || a.releaseAt || a.links)) {
      const outcomes = acceptances.some((a) => a.finish || a.smppMessage)
        ? await this.#commitInOneStatementWithRecords(acceptances, now)
        : await this.#commitInOneStatement(this.ctx.store.db, acceptances, now);
      if (outcomes) return outcomes;
    }
    return this.ctx.store.db.transaction().execute(async (trx) => {
      const refusals = await this.#recheckAccess(trx, acceptances);
      const remaining = await this.#debit(trx, acceptances, refusals, now);
      const outcomes: Outcome[] = [];
      const ledger: CreditLedgerTable[] = [];
      const batches: BatchesTable[] = [];
      const messages: MessagesTable[] = [];
      const finishes: { finish: Finish; value: unknown }[] = [];
      const writes: ((trx: Executor) => Promise<void>)[] = [];
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
        if (a.write) writes.push(a.write);
        if (a.smppMessage) smpp.push(a.smppMessage);
        const value = a.respond(balance);
        if (a.finish) finishes.push({ finish: a.finish, value });
        outcomes.push({ ok: true, value });
      });
      if (messages.length > 0) {
        await insertLedgerRows(trx, ledger);
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
        const outcomes = await this.#commitInOneStatement(trx, acceptances, now);
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
   * The group in one statement (acceptance.repository.ts), or null when it wrote nothing because
   * an acceptance needs what only the general path does: an access re-check (a grant older than
   * the database's revision) or a refusal (a debit the balance or the daily cap does not cover).
   */
  async #commitInOneStatement(db: Executor, acceptances: Acceptance<unknown>[], now: number): Promise<Outcome[] | null> {
    const debits = new Map<string, { accountId: string; credits: number; messages: number }>();
    const group: AcceptanceGroup = { grantedRevision: null, day: utcDay(now), now, debits: [], ledger: [], batches: [], messages: [], jobIds: [] };
    for (const a of acceptances) {
      if (a.access && (group.grantedRevision === null || a.access.revision < group.grantedRevision)) group.grantedRevision = a.access.revision;
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
    const result = await acceptGroupInOneStatement(db, group);
    if (result.revision !== null) observeAccessRevision(this.ctx.store, result.revision);
    if (!result.written) return null;
    // As if debited one after the other: each acceptance sees the balance after its own debit.
    const balances = new Map<string, number>();
    group.debits.forEach((d, i) => balances.set(d.accountId, result.balances[i]! + d.credits));
    return acceptances.map((a) => {
      const balance = balances.get(a.accountId)! - a.credits;
      balances.set(a.accountId, balance);
      return { ok: true, value: a.respond(balance) };
    });
  }

  /**
   * Acceptances granted under an older access revision than the one this transaction reads are
   * checked again against the database itself: a key revoked, an account suspended or a Sender ID
   * withdrawn before this commit refuses them, whatever the request saw. The revision is read
   * inside the transaction, so no change can land between the check and the commit on SQLite
   * (the write lock is held), and on PostgreSQL one that does is concurrent with the send.
   */
  async #recheckAccess(trx: Transaction<Database>, acceptances: Acceptance<unknown>[]): Promise<(AppError | null)[]> {
    const refusals: (AppError | null)[] = acceptances.map(() => null);
    if (!acceptances.some((a) => a.access)) return refusals;
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
    return refusals;
  }

  /**
   * Debits each account once for all its acceptances when the balance and the daily cap cover
   * them all, otherwise one by one in arrival order. Accounts are locked in id order, so
   * concurrent transactions on PostgreSQL never wait on each other in a cycle. Returns each
   * acceptance's balance after its own debit, or null where it was refused (the reason goes into
   * `refusals`). The cap is checked by the debit's own UPDATE: no extra query unless one is refused.
   */
  async #debit(trx: Transaction<Database>, acceptances: Acceptance<unknown>[], refusals: (AppError | null)[], now: number): Promise<(number | null)[]> {
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
