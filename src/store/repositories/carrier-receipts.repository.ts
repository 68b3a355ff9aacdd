/**
 * The lookups that match a carrier's receipt to a message: by the id the carrier answered at
 * submit (any part's, however the carrier spells it), what each route's SMSC is known to do with
 * ids, and whether submits are still on their way to being committed.
 */
import { sql } from 'kysely';
import type { ReceiptIdSpelling } from '../../carriers/carrier-ids.ts';
import type { Executor } from '../connect.ts';
import type { CarrierPartsTable, MessagesTable } from '../database.ts';
import { chunked } from '../chunk.ts';
import { dispatchAccountsWalk } from './jobs.repository.ts';

/** Records the ids the carrier answered for each part of the messages just submitted. */
export async function insertCarrierParts(db: Executor, parts: CarrierPartsTable[]): Promise<void> {
  for (const rows of chunked(parts, 6)) await db.insertInto('carrier_parts').values(rows).execute();
}

export async function messagesByCarrierIds(db: Executor, carrierIds: string[]): Promise<MessagesTable[]> {
  const out: MessagesTable[] = [];
  for (const part of chunked(carrierIds, 1)) {
    out.push(...(await db.selectFrom('messages').selectAll().where('carrier_message_id', 'in', part).execute()));
  }
  return out;
}

/** Parts whose key or converted key is one of `keys`. */
export async function carrierPartsByKeys(db: Executor, keys: string[]): Promise<{ message_id: string; part_key: string; part_alt: string | null }[]> {
  const out: { message_id: string; part_key: string; part_alt: string | null }[] = [];
  for (const part of chunked(keys, 2)) {
    out.push(
      ...(await db
        .selectFrom('carrier_parts')
        .select(['message_id', 'part_key', 'part_alt'])
        .where((eb) => eb.or([eb('part_key', 'in', part), eb('part_alt', 'in', part)]))
        .execute()),
    );
  }
  return out;
}

export async function routeIdSpellings(db: Executor, routes: string[]): Promise<Map<string, ReceiptIdSpelling>> {
  if (routes.length === 0) return new Map();
  const rows = await db.selectFrom('carrier_routes').select(['route', 'receipt_ids']).where('route', 'in', routes).execute();
  return new Map(rows.map((r) => [r.route, r.receipt_ids as ReceiptIdSpelling]));
}

export async function saveRouteIdSpelling(db: Executor, route: string, spelling: ReceiptIdSpelling, now: number): Promise<void> {
  await db
    .insertInto('carrier_routes')
    .values({ route, receipt_ids: spelling, updated_at: now })
    .onConflict((oc) => oc.column('route').doUpdateSet({ receipt_ids: spelling, updated_at: now }))
    .execute();
}

/**
 * When the oldest dispatch claim still held began, or its lease was last renewed (a lease ends
 * `leaseMs` after either): a submit made since then may have been answered and not yet committed. Null when none is held. A job
 * waiting out a retry delay looks like a claim too, which only makes a receipt wait longer.
 */
export async function oldestDispatchClaim(db: Executor, now: number, leaseMs: number): Promise<number | null> {
  // Per account with dispatch jobs, its first job leased past now, read from `jobs_queue_account`
  // (ordered by run_at within an account): the cost is a probe per account, not a read of the
  // whole backlog.
  const { rows } = await sql<{ run_at: number | string | null }>`with recursive ${dispatchAccountsWalk('')}
    select min((
      select j.run_at from jobs j
      where j.queue = 'dispatch' and j.account_id = a.account_id and j.run_at > ${now} and j.attempts > 0
      order by j.run_at limit 1
    )) as run_at
    from accounts a where a.account_id is not null`.execute(db);
  const runAt = rows[0]?.run_at;
  return runAt === null || runAt === undefined ? null : Number(runAt) - leaseMs;
}
