/**
 * A group of acceptances written by one statement on PostgreSQL (alone, or inside a transaction
 * that also writes the group's idempotency records) (`pigeon_accept`, migrations 015 and 022):
 * the debits, ledger rows, batches, messages and dispatch jobs of a coalesced group in one round
 * trip, where the general path (acceptance-batcher.ts) takes one per statement plus BEGIN and
 * COMMIT. Every column goes as one array parameter, so a bulk of 10,000 is one statement too.
 */
import { CompiledQuery, sql } from 'kysely';
import { named, type Db, type Executor } from '../connect.ts';
import type { BatchesTable, Database, MessagesTable } from '../database.ts';
import { insertRows, insertStatementOf } from '../insert-rows.ts';
import { dialectOf } from '../dialect.ts';
import { commitWith, inOneTrip } from '../pipelined-postgres.ts';

export interface AcceptanceGroup {
  /** The oldest access revision an acceptance of the group was granted under, or null if none was. */
  grantedRevision: number | null;
  /** The UTC day of the daily cap (days since 1970-01-01). */
  day: number;
  now: number;
  /** One debit per account, in account id order (the order rows are locked in). */
  debits: { accountId: string; credits: number; messages: number }[];
  /** Debit rows of the ledger, dated `now`. */
  ledger: { id: string; accountId: string; amount: number; reference: string }[];
  batches: BatchesTable[];
  /** New messages (no carrier fields yet); each `pending` one gets a dispatch job due at `now`. */
  messages: MessagesTable[];
  jobIds: string[];
}

export type GroupResult =
  /** Written: each debit's balance after it, in the order of `debits`. */
  | { written: true; revision: number; balances: number[] }
  /** Nothing written: access changed since a grant (`stale`), or a debit was refused (`refused`). */
  | { written: false; revision: number | null; reason: 'stale' | 'refused' };

/** Whether this store writes groups in one statement (PostgreSQL) or takes the general path. */
export function acceptsInOneStatement(db: Db): boolean {
  return dialectOf(db) === 'postgres';
}

/** The call, written once: each argument is one parameter (an array for a column of rows). */
const TYPES = [
  'bigint', 'integer', 'bigint',
  'text[]', 'bigint[]', 'integer[]',
  'text[]', 'text[]', 'bigint[]', 'text[]',
  'text[]', 'text[]', 'integer[]', 'integer[]', 'bigint[]',
  'text[]', 'text[]', 'text[]', 'text[]', 'text[]', 'text[]', 'text[]', 'integer[]', 'text[]', 'text[]', 'bigint[]', 'bigint[]',
  'bigint[]', 'integer[]', 'bigint[]', 'integer[]',
  'text[]',
];
const CALL = `select * from pigeon_accept(${TYPES.map((t, i) => `$${i + 1}::${t}`).join(', ')})`;

/**
 * Writes the group. Rows of other tables (`beside`, Acceptance.beside) go in the same statement, as
 * inserts of a WITH before the call, or after it in as many statements as they need parameters:
 * `db` is then a transaction, which rolls them back if the call writes nothing.
 *
 * With `commit`, `db` is a transaction that the statement ends (`commitWith`, in the same round
 * trip): only where its success alone decides the commit, so with no grant to compare (a group
 * under a grant may write nothing and succeed) and with the rows beside it in the statement itself.
 * `ended` says whether it did; the transaction is then over whatever the outcome.
 */
export async function acceptGroupInOneStatement(db: Executor, g: AcceptanceGroup, beside: readonly BesideRow[] = [], opts: { commit?: boolean } = {}): Promise<GroupResult & { ended: boolean }> {
  const m = g.messages;
  const col = <K extends keyof MessagesTable>(k: K) => m.map((r) => r[k]);
  const parameters = [
    g.grantedRevision, g.day, g.now,
    g.debits.map((d) => d.accountId), g.debits.map((d) => d.credits), g.debits.map((d) => d.messages),
    g.ledger.map((l) => l.id), g.ledger.map((l) => l.accountId), g.ledger.map((l) => l.amount), g.ledger.map((l) => l.reference),
    g.batches.map((b) => b.id), g.batches.map((b) => b.account_id), g.batches.map((b) => b.total), g.batches.map((b) => b.queued), g.batches.map((b) => b.credits_used),
    col('id'), col('account_id'), col('batch_id'), col('recipient'), col('sender'), col('body'), col('encoding'), col('segments'), col('status'), col('callback_url'), col('created_at'), col('updated_at'),
    col('send_at'), col('validity_period'), col('expires_at'), m.map((r) => r.credits ?? null),
    g.jobIds,
  ];
  const inserts = besideInserts(db, beside, parameters.length + 1);
  const ends = opts.commit === true && g.grantedRevision === null && (inserts !== null || beside.length === 0);
  try {
    const text = inserts ? `with ${inserts.sql.map((s, i) => `beside_${i} as (${s})`).join(', ')} ${CALL}` : CALL;
    const query = CompiledQuery.raw(text, inserts ? [...parameters, ...inserts.parameters] : parameters) as CompiledQuery<{ revision: number; balances: (string | number)[] | null }>;
    const { rows } = ends ? await commitWith(db, query) : await db.executeQuery(query);
    if (!inserts && beside.length > 0 && rows[0]!.balances !== null) await insertBesideRows(db, beside);
    const row = rows[0]!;
    const revision = Number(row.revision);
    if (row.balances === null) return { written: false, revision, reason: 'stale', ended: ends };
    return { written: true, revision, balances: row.balances.map(Number), ended: ends };
  } catch (error) {
    if ((error as { code?: string }).code === 'PGN01') return { written: false, revision: null, reason: 'refused', ended: ends };
    throw error;
  }
}

/** The acceptance's space of PostgreSQL's two-key advisory locks (apart from the one-key locks of the rest). */
const ADMISSION_LOCK_SPACE = 28;

/**
 * Locks the keys of a group's admissions (`Acceptance.admitLock`) until its transaction ends, all
 * in one statement and in key order, so that two transactions never wait on each other in a cycle.
 * On PostgreSQL an advisory lock per key (several acceptance transactions run at once); on SQLite
 * nothing: the writer's transaction already holds the only write lock.
 */
export async function lockAdmissionKeys(trx: Executor, keys: readonly string[]): Promise<void> {
  if (keys.length === 0 || dialectOf(trx) !== 'postgres') return;
  const sorted = [...new Set(keys)].sort();
  await sql`${named}select pg_advisory_xact_lock(${ADMISSION_LOCK_SPACE}, hashtext(k)) from (select k from unnest(${sorted}::text[]) as k order by k) as keys`.execute(trx);
}

/** The inserts of `rows`, a table's rows to each, their parameters numbered from `first`; null if they take too many. */
function besideInserts(db: Executor, rows: readonly BesideRow[], first: number): { sql: string[]; parameters: unknown[] } | null {
  if (rows.length === 0) return null;
  const out = { sql: [] as string[], parameters: [] as unknown[] };
  for (const [table, list] of rowsByTable(rows)) {
    const insert = insertStatementOf(db, table, list, first + out.parameters.length);
    if (!insert) return null;
    out.sql.push(insert.sql);
    out.parameters.push(...insert.parameters);
  }
  return out;
}

/**
 * Locks the keys of a group's admissions as `lockAdmissionKeys` does and reads the access revision,
 * in one statement (PostgreSQL): the first of a transaction that admits (acceptance-batcher.ts).
 * The statements `then` (the admissions' reads) go in the same round trip behind it, and each runs
 * once the locks are held: their rows come back in order.
 *
 * It also sets, for the rest of the transaction, PostgreSQL's plans of named statements to their
 * generic ones. Left to itself, PostgreSQL compares a named statement's generic plan with the
 * custom plans of its first five runs, and an array parameter's length counts: the generic plan
 * guesses ten elements, so on a connection whose first groups were smaller it planned every run
 * again (the fraud guard's read, with its joins and subqueries: 0.1-0.6 ms a group), for the same
 * plan. A lone verification's guard read took 240-320 µs that way, seen from the client, and about
 * 100 µs with its generic plan; in groups of 8, 37-58 against 25-40 µs a verification
 * (docs/performance.md). Only the statements of this transaction are concerned: the named ones
 * have fixed texts with arrays for the rows, the others are lookups by key and inserts (`admit`,
 * `write`, the group's records); none has a plan that depends on its values. Every other
 * transaction keeps PostgreSQL's choice.
 */
export async function lockAdmissionKeysReadingRevision(trx: Executor, keys: readonly string[], then: readonly CompiledQuery[] = []): Promise<{ revision: number; rows: unknown[][] }> {
  const sorted = [...new Set(keys)].sort();
  const lock = sql<{ revision: string | number }>`${named}select (select value from access_revision where id = 1) as revision,
    (select count(pg_advisory_xact_lock(${ADMISSION_LOCK_SPACE}, hashtext(k))) from (select k from unnest(${sorted}::text[]) as k order by k) as keys) as locked,
    set_config('plan_cache_mode', 'force_generic_plan', true) as plans`.compile(trx);
  const [locked, ...read] = await inOneTrip(trx, [lock, ...then]);
  return { revision: Number((locked!.rows[0] as { revision: string | number }).revision), rows: read.map((r) => r.rows as unknown[]) };
}

/** A row of another table written with an acceptance (`Acceptance.beside`). */
export type BesideRow = { [T in keyof Database]: { table: T; row: Database[T] } }[keyof Database];

/**
 * The rows a group's acceptances write beside their messages, one multi-row insert per table (in
 * the order the tables first appear), where each acceptance's own statements would have cost a
 * statement per row (on PostgreSQL a round trip each). A table's rows must all have the same columns.
 */
export async function insertBesideRows(trx: Executor, rows: readonly BesideRow[]): Promise<void> {
  for (const [table, list] of rowsByTable(rows)) await insertRows(trx, table, list);
}

/** The rows by table, in the order the tables first appear. */
function rowsByTable(rows: readonly BesideRow[]): Map<keyof Database, object[]> {
  const byTable = new Map<keyof Database, object[]>();
  for (const { table, row } of rows) {
    let list = byTable.get(table);
    if (!list) byTable.set(table, (list = []));
    list.push(row);
  }
  return byTable;
}
