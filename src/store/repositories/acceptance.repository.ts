/**
 * A group of acceptances written by one statement on PostgreSQL (alone, or inside a transaction
 * that also writes the group's idempotency records) (`pigeon_accept`, migrations 015 and 022):
 * the debits, ledger rows, batches, messages and dispatch jobs of a coalesced group in one round
 * trip, where the general path (acceptance-batcher.ts) takes one per statement plus BEGIN and
 * COMMIT. Every column goes as one array parameter, so a bulk of 10,000 is one statement too.
 */
import { CompiledQuery } from 'kysely';
import type { Db, Executor } from '../connect.ts';
import type { BatchesTable, MessagesTable } from '../database.ts';
import { dialectOf } from '../dialect.ts';

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

export async function acceptGroupInOneStatement(db: Executor, g: AcceptanceGroup): Promise<GroupResult> {
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
  try {
    const { rows } = await db.executeQuery<{ revision: number; balances: (string | number)[] | null }>(CompiledQuery.raw(CALL, parameters));
    const row = rows[0]!;
    const revision = Number(row.revision);
    if (row.balances === null) return { written: false, revision, reason: 'stale' };
    return { written: true, revision, balances: row.balances.map(Number) };
  } catch (error) {
    if ((error as { code?: string }).code === 'PGN01') return { written: false, revision: null, reason: 'refused' };
    throw error;
  }
}
