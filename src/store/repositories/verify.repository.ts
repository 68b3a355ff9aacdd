/**
 * Verify's tables (migration 028): services, verifications, the carrier texts, the fraud guard's
 * blocks and safe list, and the installation's secrets.
 */
import { sql, type CompiledQuery } from 'kysely';
import { named, type Executor, type Store } from '../connect.ts';
import type { VerificationStatus, VerificationsTable, VerifyBlocksTable, VerifyServicesTable } from '../database.ts';
import { preparedRead, preparedTransactionRead, preparedWrite } from '../prepared-statements.ts';
import { dialectOf } from '../dialect.ts';

/**
 * `pending` written into the SQL, not bound: with a bound value SQLite may use the partial index
 * of pending verifications (migration 032) only by preparing the statement again at every run,
 * which cost a lookup by number nine times its work (35 µs instead of 4).
 */
const PENDING = sql.lit<VerificationStatus>('pending');
/** The same for a LIMIT: a bound one made SQLite (3.53) prepare the lookup by number again at every run too (50 µs instead of 7). */
const ONE = sql.lit(1);

/** The installation's secret of that name, made from `make()` on first use (the first writer wins). */
export async function installationSecret(db: Executor, name: string, make: () => string, now: number): Promise<string> {
  await db.insertInto('installation_secrets').values({ name, value: make(), created_at: now }).onConflict((oc) => oc.column('name').doNothing()).execute();
  const row = await db.selectFrom('installation_secrets').select('value').where('name', '=', name).executeTakeFirstOrThrow();
  return row.value;
}

const liveServiceQuery = (db: Executor, accountId: string, id: string) =>
  db.selectFrom('verify_services').selectAll().where('id', '=', id).where('account_id', '=', accountId).where('deleted_at', 'is', null);

/**
 * The service, read on the read connection (prepared). Only committed rows count, so a change
 * made by another process is seen at once.
 */
export const liveService: (store: Store, accountId: string, id: string) => Promise<VerifyServicesTable | undefined> = preparedRead(liveServiceQuery);

const liveServiceRow = preparedWrite(liveServiceQuery);

/** The same in the caller's transaction: a create's check that the service it cached still stands. */
export async function liveServiceIn(db: Executor, accountId: string, id: string): Promise<VerifyServicesTable | undefined> {
  return (await liveServiceRow(db, accountId, id)).rows[0] as VerifyServicesTable | undefined;
}

export async function insertService(db: Executor, row: VerifyServicesTable): Promise<void> {
  await db.insertInto('verify_services').values(row).execute();
}

export async function servicesOf(db: Executor, accountId: string): Promise<VerifyServicesTable[]> {
  return db.selectFrom('verify_services').selectAll().where('account_id', '=', accountId).where('deleted_at', 'is', null).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(1000).execute();
}

export async function updateService(db: Executor, accountId: string, id: string, changes: Partial<VerifyServicesTable>): Promise<void> {
  await db.updateTable('verify_services').set(changes).where('id', '=', id).where('account_id', '=', accountId).where('deleted_at', 'is', null).execute();
}

type Value = string | number | null;
const VERIFICATION_COLUMNS = ['id', 'account_id', 'service_id', 'recipient', 'range_prefix', 'country', 'code_hash', 'status', 'sends', 'checks_left', 'message_id', 'credits_used', 'last_sent_at', 'expires_at', 'created_at', 'updated_at'] as const;

// Compiled once: every create writes one in the acceptance's transaction, beside its message.
const insertVerificationRow = preparedWrite((db, ...values: Value[]) =>
  db.insertInto('verifications').values(Object.fromEntries(VERIFICATION_COLUMNS.map((c, i) => [c, values[i]])) as unknown as VerificationsTable),
);

export async function insertVerification(db: Executor, row: VerificationsTable): Promise<void> {
  await insertVerificationRow(db, ...VERIFICATION_COLUMNS.map((c) => row[c] as Value));
}

export async function verificationById(db: Executor, accountId: string, id: string): Promise<VerificationsTable | undefined> {
  return db.selectFrom('verifications').selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
}

/**
 * The verification to that number pending in the service (one at most: migration 032's unique
 * index); with `now`, only if not yet past its expiry.
 */
export async function pendingVerification(db: Executor, serviceId: string, recipient: string, now?: number): Promise<VerificationsTable | undefined> {
  let q = db.selectFrom('verifications').selectAll().where('service_id', '=', serviceId).where('recipient', '=', recipient).where('status', '=', PENDING);
  if (now !== undefined) q = q.where('expires_at', '>', now);
  return q.orderBy('created_at', 'desc').limit(ONE).executeTakeFirst();
}

const pendingToRow = preparedWrite((db, serviceId: string, recipient: string) =>
  db.selectFrom('verifications').selectAll().where('service_id', '=', serviceId).where('recipient', '=', recipient).where('status', '=', PENDING).orderBy('created_at', 'desc').limit(ONE),
);

/** The same without `now`, prepared, in the caller's transaction: the lookup of every create (its acceptance's). */
export async function pendingTo(db: Executor, serviceId: string, recipient: string): Promise<VerificationsTable | undefined> {
  return (await pendingToRow(db, serviceId, recipient)).rows[0] as VerificationsTable | undefined;
}

/**
 * Reserves a resend: one more send and its time, if the verification is still pending, has sends
 * left and was last sent at or before `sentBefore`. Says why not otherwise.
 */
export async function reserveResend(db: Executor, id: string, maxSends: number, sentBefore: number, now: number): Promise<'ok' | 'max_sends' | 'too_soon' | 'closed'> {
  const result = await db
    .updateTable('verifications')
    .set((eb) => ({ sends: eb('sends', '+', 1), last_sent_at: now, updated_at: now }))
    .where('id', '=', id)
    .where('status', '=', PENDING)
    .where('sends', '<', maxSends)
    .where('last_sent_at', '<=', sentBefore)
    .executeTakeFirst();
  if (result.numUpdatedRows > 0n) return 'ok';
  const row = await db.selectFrom('verifications').select(['status', 'sends']).where('id', '=', id).executeTakeFirst();
  if (!row || row.status !== 'pending') return 'closed';
  return Number(row.sends) >= maxSends ? 'max_sends' : 'too_soon';
}

/** Gives back a reserved resend whose message was refused. */
export async function releaseResend(db: Executor, id: string, lastSentAt: number | null): Promise<void> {
  await db.updateTable('verifications').set((eb) => ({ sends: eb('sends', '-', 1), last_sent_at: lastSentAt })).where('id', '=', id).execute();
}

/** The message of a reserved resend, and what it cost. */
export async function recordResentMessage(db: Executor, id: string, messageId: string, credits: number): Promise<void> {
  await db.updateTable('verifications').set((eb) => ({ message_id: messageId, credits_used: eb('credits_used', '+', credits) })).where('id', '=', id).execute();
}

/**
 * Takes one check from a pending, unexpired verification in one conditional UPDATE: of any number
 * of parallel checks, at most `checks_left` get a row back, so at most that many codes are
 * evaluated. Returns the row as it was before, or undefined when no check was left.
 */
export async function takeCheck(db: Executor, id: string, now: number): Promise<VerificationsTable | undefined> {
  const row = await db
    .updateTable('verifications')
    .set((eb) => ({ checks_left: eb('checks_left', '-', 1), updated_at: now }))
    .where('id', '=', id)
    .where('status', '=', PENDING)
    .where('checks_left', '>', 0)
    .where('expires_at', '>', now)
    .returningAll()
    .executeTakeFirst();
  return row ? { ...row, checks_left: Number(row.checks_left) + 1 } : undefined;
}

const takeCheckQuery = (db: Executor, accountId: string, serviceId: string, now: number, granted: number) =>
  db
    .updateTable('verifications')
    .set((eb) => ({ checks_left: eb('checks_left', '-', 1), updated_at: now }))
    .where('account_id', '=', accountId)
    .where('service_id', '=', serviceId)
    .where('status', '=', PENDING)
    .where('checks_left', '>', 0)
    .where('expires_at', '>', now)
    .where((eb) => eb.exists(eb.selectFrom('verify_services').select(sql.lit(1).as('one')).where('verify_services.id', '=', serviceId).where('verify_services.deleted_at', 'is', null)))
    .where(sql<number>`(select value from access_revision where id = 1)`, '<=', granted);
const takeCheckById = preparedWrite((db, accountId: string, serviceId: string, now: number, granted: number, id: string) => takeCheckQuery(db, accountId, serviceId, now, granted).where('id', '=', id).returningAll());
const takeCheckByRecipient = preparedWrite((db, accountId: string, serviceId: string, now: number, granted: number, recipient: string) =>
  takeCheckQuery(db, accountId, serviceId, now, granted).where('recipient', '=', recipient).returningAll(),
);

/**
 * `takeCheck` in the one statement a check needs: a check taken from the verification, by id or
 * by number, pending in that (not deleted) service of the account, while the access revision is
 * still at most `granted`, the one the request's key was checked at (null: checked for this
 * request). Returns the row as it was before, or undefined when there is none to take (no such
 * verification or service, not pending, no checks left, past its expiry, access changed since),
 * which the caller then tells apart at leisure.
 */
export async function takeCheckIn(db: Executor, accountId: string, serviceId: string, target: { id: string } | { recipient: string }, now: number, granted: number | null): Promise<VerificationsTable | undefined> {
  const revision = granted ?? Number.MAX_SAFE_INTEGER;
  const result = 'id' in target ? await takeCheckById(db, accountId, serviceId, now, revision, target.id) : await takeCheckByRecipient(db, accountId, serviceId, now, revision, target.recipient);
  // One at most by number too: a service has one pending verification per number (migration 032).
  const row = result.rows[0] as VerificationsTable | undefined;
  return row ? { ...row, checks_left: Number(row.checks_left) + 1 } : undefined;
}

export interface CheckById {
  accountId: string;
  serviceId: string;
  id: string;
  now: number;
  granted: number | null;
}

/**
 * `takeCheckIn` for many checks by id in one statement, on PostgreSQL (a round trip per check is
 * what a check cost there, against a send's share of one statement per group). The checks of one
 * verification are counted together: its row is locked, and as many checks are taken as it has
 * left, each answered with the row as it was before its own (`checks_left` one less each time),
 * in the order given; the rest get undefined, as they would have one by one. The conditions are
 * `takeCheckIn`'s, with the earliest `granted` and the latest `now` of a verification's checks.
 */
export async function takeChecksById(db: Executor, checks: readonly CheckById[]): Promise<(VerificationsTable | undefined)[]> {
  const byId = new Map<string, { first: CheckById; n: number; granted: number; now: number; at: number[] }>();
  checks.forEach((c, i) => {
    const granted = c.granted ?? Number.MAX_SAFE_INTEGER;
    const entry = byId.get(c.id);
    if (!entry) byId.set(c.id, { first: c, n: 1, granted, now: c.now, at: [i] });
    else if (entry.first.accountId !== c.accountId || entry.first.serviceId !== c.serviceId) entry.at.push(-1 - i); // another account's or service's: never this row
    else {
      entry.n++;
      entry.granted = Math.min(entry.granted, granted);
      entry.now = Math.max(entry.now, c.now);
      entry.at.push(i);
    }
  });
  const wanted = [...byId.values()];
  const { rows } = await sql<VerificationsTable & { checks_before: number | string }>`${named}
    with wanted as (
      select * from unnest(${wanted.map((w) => w.first.id)}::text[], ${wanted.map((w) => w.first.accountId)}::text[], ${wanted.map((w) => w.first.serviceId)}::text[],
        ${wanted.map((w) => w.n)}::int[], ${wanted.map((w) => w.granted)}::bigint[], ${wanted.map((w) => w.now)}::bigint[]) as w(id, account_id, service_id, n, granted, now)
    ), current as (
      select v.id, v.checks_left from verifications v join wanted w on v.id = w.id
      where v.account_id = w.account_id and v.service_id = w.service_id and v.status = ${PENDING} and v.checks_left > 0 and v.expires_at > w.now
        and exists (select 1 from verify_services s where s.id = w.service_id and s.deleted_at is null)
        and (select value from access_revision where id = 1) <= w.granted
      order by v.id
      for update of v
    ), taken as (
      update verifications v set checks_left = v.checks_left - least(w.n, c.checks_left), updated_at = w.now
      from current c join wanted w on w.id = c.id
      where v.id = c.id
      returning v.*
    )
    select taken.*, c.checks_left as checks_before from taken join current c on c.id = taken.id`.execute(db);
  const out: (VerificationsTable | undefined)[] = new Array(checks.length).fill(undefined);
  for (const { checks_before, ...row } of rows) {
    const before = Number(checks_before);
    let j = 0;
    for (const i of byId.get(row.id)!.at) {
      if (i < 0) continue;
      if (j < before) out[i] = { ...row, checks_left: before - j } as VerificationsTable;
      j++;
    }
  }
  return out;
}

/** Moves a pending verification to a final status; false when it was no longer pending. */
export async function closeVerification(db: Executor, id: string, status: VerificationStatus, now: number, extra: { checksLeft?: number } = {}): Promise<boolean> {
  const result = await db
    .updateTable('verifications')
    .set({ status, updated_at: now, ...(extra.checksLeft !== undefined ? { checks_left: extra.checksLeft } : {}) })
    .where('id', '=', id)
    .where('status', '=', PENDING)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) return false;
  await db.deleteFrom('verify_texts').where('verification_id', '=', id).execute();
  return true;
}

/**
 * Closes each verification still pending with its status, and deletes the texts of those it closed
 * (as `closeVerification` for each); the ids it closed. Of several closes of one id, the first is
 * the one made. On PostgreSQL two statements for them all; on SQLite one prepared UPDATE each, in
 * the caller's transaction.
 */
export async function closeVerifications(db: Executor, all: readonly { id: string; status: VerificationStatus; now: number }[]): Promise<Set<string>> {
  const closed = new Set<string>();
  const seen = new Set<string>();
  const closes = all.filter((c) => !seen.has(c.id) && Boolean(seen.add(c.id)));
  if (closes.length === 0) return closed;
  if (dialectOf(db) !== 'postgres') {
    for (const c of closes) if ((await closeRow(db, c.id, c.status, c.now)).numAffectedRows! > 0n) closed.add(c.id);
  } else {
    const { rows } = await sql<{ id: string }>`${named}update verifications v set status = c.status, updated_at = c.now
      from unnest(${closes.map((c) => c.id)}::text[], ${closes.map((c) => c.status)}::text[], ${closes.map((c) => c.now)}::bigint[]) as c(id, status, now)
      where v.id = c.id and v.status = ${PENDING} returning v.id`.execute(db);
    for (const r of rows) closed.add(r.id);
  }
  if (closed.size > 0) await db.deleteFrom('verify_texts').where('verification_id', 'in', [...closed]).execute();
  return closed;
}

const closeRow = preparedWrite((db, id: string, status: VerificationStatus, now: number) =>
  db.updateTable('verifications').set({ status, updated_at: now }).where('id', '=', id).where('status', '=', PENDING),
);

/** Pending verifications past their expiry, oldest first. */
export async function expiredPending(db: Executor, now: number, limit: number): Promise<VerificationsTable[]> {
  return db.selectFrom('verifications').selectAll().where('status', '=', PENDING).where('expires_at', '<=', now).orderBy('expires_at').limit(limit).execute();
}

const insertVerifyTextRow = preparedWrite((db, messageId: string, verificationId: string, body: string) =>
  db.insertInto('verify_texts').values({ message_id: messageId, verification_id: verificationId, body }),
);

export async function insertVerifyText(db: Executor, messageId: string, verificationId: string, body: string): Promise<void> {
  await insertVerifyTextRow(db, messageId, verificationId, body);
}

/** The carrier texts of those messages that are verification messages. */
export async function verifyTexts(db: Executor, messageIds: readonly string[]): Promise<Map<string, string>> {
  if (messageIds.length === 0) return new Map();
  const rows = await db.selectFrom('verify_texts').select(['message_id', 'body']).where('message_id', 'in', [...messageIds]).execute();
  return new Map(rows.map((r) => [r.message_id, r.body]));
}

/** What the fraud guard's rules 2 and 3 need to decide a new verification (guardFiguresOf). */
export interface GuardFigures {
  /** Safe-list entries of the account that cover the number. */
  safe: number;
  /** Verifications created in the service since `velocitySince` (not blocked) to the number, and the oldest's time. */
  per_number: number;
  per_number_oldest: number | null;
  /** The same to its range. */
  per_range: number;
  per_range_oldest: number | null;
  /** The range's block for the account, if it ever had one. */
  block_level: number | null;
  blocked_until: number | null;
  /** Sent to the account's range since `conversionSince` and since its last block ended, and how many approved. */
  sent: number;
  approved: number;
  /** 1 when a verification to the number is pending in the service (`pendingTo` reads it), else null. */
  pending: number | null;
}

/** What `guardFiguresOf` reads for one new verification. */
export interface GuardQuestion {
  serviceId: string;
  accountId: string;
  recipient: string;
  range: string;
  velocitySince: number;
  conversionSince: number;
}

/**
 * Every figure of the fraud guard for each of a group's new verifications, and whether one to its
 * number is pending, run in the transaction that accepts their messages. Counting the rows,
 * whichever process wrote them, keeps the guard exact across processes with no counters to keep in
 * step. The figures come from one scan of the account's index over the number's range since the
 * older of the two windows (migration 037): the service's hour of the number and of the range
 * (velocity) and the account's day of the range (conversion). The range's block is read once, for
 * its level and for where the conversion count starts; the pending one from the partial index of
 * pending verifications alone.
 *
 * On SQLite one prepared statement per verification (in process, no round trips); on PostgreSQL
 * one statement for the whole group, where each would be a round trip. `db` is a transaction of
 * `store.db` (preparedTransactionRead).
 */
export async function guardFiguresOf(db: Executor, questions: readonly GuardQuestion[], store: Store): Promise<GuardFigures[]> {
  if (questions.length === 0) return [];
  if (dialectOf(db) !== 'postgres') {
    const out: GuardFigures[] = [];
    for (const q of questions) {
      const since = Math.min(q.velocitySince, q.conversionSince);
      const rows = guardFiguresRow(store, db, q.serviceId, q.accountId, q.recipient, q.range, q.velocitySince, q.conversionSince, since);
      out.push((Array.isArray(rows) ? rows : await rows)[0]!);
    }
    return out;
  }
  return (await db.executeQuery(guardFiguresStatement(db, questions))).rows;
}

/**
 * `guardFiguresOf` on PostgreSQL: one statement for a group's questions, as guardFiguresRow, one row
 * per question (in order) through LATERAL joins. Sent with the group's locks (acceptance-batcher.ts).
 */
export function guardFiguresStatement(db: Executor, questions: readonly GuardQuestion[]): CompiledQuery<GuardFigures> {
  const column = <K extends keyof GuardQuestion>(k: K) => questions.map((q) => q[k]);
  return sql<GuardFigures>`${named}
    select
      (select count(*) from verify_safe_list s where s.account_id = w.account_id and substr(w.recipient, 1, length(s.entry)) = s.entry) as safe,
      c.per_number, c.per_number_oldest, c.per_range, c.per_range_oldest,
      b.block_level, b.blocked_until, c.sent, c.approved,
      (select ${ONE} from verifications p where p.service_id = w.service_id and p.recipient = w.recipient and p.status = ${PENDING} limit ${ONE}) as pending
    from unnest(${column('serviceId')}::text[], ${column('accountId')}::text[], ${column('recipient')}::text[], ${column('range')}::text[],
      ${column('velocitySince')}::bigint[], ${column('conversionSince')}::bigint[]) with ordinality as w(service_id, account_id, recipient, range, velocity_since, conversion_since, ord)
    cross join lateral (select max(k.level) as block_level, max(k.blocked_until) as blocked_until from verify_blocks k
      where k.account_id = w.account_id and k.range_prefix = w.range) b
    cross join lateral (select
        count(*) filter (where v.service_id = w.service_id and v.recipient = w.recipient and v.created_at > w.velocity_since) as per_number,
        min(v.created_at) filter (where v.service_id = w.service_id and v.recipient = w.recipient and v.created_at > w.velocity_since) as per_number_oldest,
        count(*) filter (where v.service_id = w.service_id and v.created_at > w.velocity_since) as per_range,
        min(v.created_at) filter (where v.service_id = w.service_id and v.created_at > w.velocity_since) as per_range_oldest,
        count(*) filter (where v.created_at > w.conversion_since and v.created_at > coalesce(b.blocked_until, 0)) as sent,
        count(*) filter (where v.status = 'approved' and v.created_at > w.conversion_since and v.created_at > coalesce(b.blocked_until, 0)) as approved
      from verifications v
      where v.account_id = w.account_id and v.range_prefix = w.range and v.created_at > least(w.velocity_since, w.conversion_since) and v.status <> 'blocked') c
    order by w.ord`.compile(db);
}

/**
 * Whether a verification to each question's number is pending (1) or not (null): a group's
 * lookups with the fraud guard off (`guardFiguresOf` gives it with the guard's figures). On
 * PostgreSQL one statement for the group; on SQLite the prepared lookup of each, which the
 * partial index of pending verifications answers alone. `db` is a transaction of `store.db`.
 */
export async function pendingOf(db: Executor, questions: readonly GuardQuestion[], store: Store): Promise<{ pending: number | null }[]> {
  if (questions.length === 0) return [];
  if (dialectOf(db) !== 'postgres') {
    const out: { pending: number | null }[] = [];
    for (const q of questions) {
      const rows = pendingRow(store, db, q.serviceId, q.recipient);
      out.push({ pending: (Array.isArray(rows) ? rows : await rows).length > 0 ? 1 : null });
    }
    return out;
  }
  return (await db.executeQuery(pendingStatement(db, questions))).rows;
}

/** `pendingOf` on PostgreSQL: one statement for a group's questions, sent with its locks (acceptance-batcher.ts). */
export function pendingStatement(db: Executor, questions: readonly GuardQuestion[]): CompiledQuery<{ pending: number | null }> {
  return sql<{ pending: number | null }>`${named}
    select (select ${ONE} from verifications p where p.service_id = w.service_id and p.recipient = w.recipient and p.status = ${PENDING} limit ${ONE}) as pending
    from unnest(${questions.map((q) => q.serviceId)}::text[], ${questions.map((q) => q.recipient)}::text[]) with ordinality as w(service_id, recipient, ord)
    order by w.ord`.compile(db);
}

/** Whether one is pending to the number, from the partial index alone (no row read: `select 1`). */
const pendingRow = preparedTransactionRead((db: Executor, serviceId: string, recipient: string) =>
  db.selectFrom('verifications').select(sql.lit(1).as('pending')).where('service_id', '=', serviceId).where('recipient', '=', recipient).where('status', '=', PENDING).limit(ONE),
);

/**
 * SQLite's statement for one question (no LATERAL): the range's block joined once (one row at
 * most: the table's key) and the account's range scanned once, by the outer query's aggregates.
 * Joined to a constant row, so that with no block and no verification it still gives the one row
 * that the aggregates count as none.
 */
const guardFiguresRow = preparedTransactionRead(
  (db: Executor, serviceId: string, accountId: string, recipient: string, range: string, velocitySince: number, conversionSince: number, since: number) => {
    const inRange = sql`v.service_id = ${serviceId} and v.created_at > ${velocitySince}`;
    const toNumber = sql`${inRange} and v.recipient = ${recipient}`;
    // A range whose block ended starts afresh: only what was sent since counts.
    const inConversion = sql`v.created_at > ${conversionSince} and v.created_at > coalesce(b.blocked_until, 0)`;
    // The safe list as safeListCovers reads it: an entry is the number or a prefix of it.
    const query = sql`select
        (select count(*) from verify_safe_list where account_id = ${accountId} and substr(${recipient}, 1, length(entry)) = entry) as safe,
        count(case when ${toNumber} then 1 end) as per_number,
        min(case when ${toNumber} then v.created_at end) as per_number_oldest,
        count(case when ${inRange} then 1 end) as per_range,
        min(case when ${inRange} then v.created_at end) as per_range_oldest,
        max(b.level) as block_level, max(b.blocked_until) as blocked_until,
        count(case when ${inConversion} then 1 end) as sent,
        count(case when v.status = 'approved' and ${inConversion} then 1 end) as approved,
        (select ${ONE} from verifications where service_id = ${serviceId} and recipient = ${recipient} and status = ${PENDING} limit ${ONE}) as pending
      from (select 1) as one
      left join verify_blocks b on b.account_id = ${accountId} and b.range_prefix = ${range}
      left join verifications v on v.account_id = ${accountId} and v.range_prefix = ${range} and v.created_at > ${since} and v.status != 'blocked'`;
    return { compile: () => query.compile(db) as CompiledQuery<GuardFigures> };
  },
);

export async function upsertBlock(db: Executor, row: VerifyBlocksTable): Promise<void> {
  await db
    .insertInto('verify_blocks')
    .values(row)
    .onConflict((oc) => oc.columns(['account_id', 'range_prefix']).doUpdateSet({ level: row.level, blocked_at: row.blocked_at, blocked_until: row.blocked_until, sent: row.sent, approved: row.approved }))
    .execute();
}

/** Blocks still in force, of one account or of all, newest first. */
export async function activeBlocks(db: Executor, now: number, accountId?: string): Promise<VerifyBlocksTable[]> {
  let q = db.selectFrom('verify_blocks').selectAll().where('blocked_until', '>', now);
  if (accountId !== undefined) q = q.where('account_id', '=', accountId);
  return q.orderBy('blocked_at', 'desc').limit(1000).execute();
}

/** Ends a block now; its level stays, so the range's next block is longer. False when none was in force. */
export async function endBlock(db: Executor, accountId: string, range: string, now: number): Promise<boolean> {
  const result = await db.updateTable('verify_blocks').set({ blocked_until: now }).where('account_id', '=', accountId).where('range_prefix', '=', range).where('blocked_until', '>', now).executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function safeList(db: Executor, accountId: string): Promise<{ entry: string; created_at: number }[]> {
  return db.selectFrom('verify_safe_list').select(['entry', 'created_at']).where('account_id', '=', accountId).orderBy('entry').limit(1000).execute();
}

export async function addSafeListEntry(db: Executor, accountId: string, entry: string, now: number): Promise<boolean> {
  const result = await db.insertInto('verify_safe_list').values({ account_id: accountId, entry, created_at: now }).onConflict((oc) => oc.columns(['account_id', 'entry']).doNothing()).executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
}

export async function deleteSafeListEntry(db: Executor, accountId: string, entry: string): Promise<boolean> {
  const result = await db.deleteFrom('verify_safe_list').where('account_id', '=', accountId).where('entry', '=', entry).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** Per service and country: verifications sent (not blocked) and approved, since `since`. */
export async function conversionStats(db: Executor, accountId: string | undefined, since: number): Promise<{ account_id: string; service_id: string; country: string | null; sent: number; approved: number }[]> {
  let q = db
    .selectFrom('verifications')
    .select(['account_id', 'service_id', 'country', sql<number>`count(*)`.as('sent'), sql<number>`sum(case when status = 'approved' then 1 else 0 end)`.as('approved')])
    .where('created_at', '>', since)
    .where('status', '!=', 'blocked');
  if (accountId !== undefined) q = q.where('account_id', '=', accountId);
  const rows = await q.groupBy(['account_id', 'service_id', 'country']).orderBy('account_id').orderBy('service_id').orderBy('country').limit(1000).execute();
  return rows.map((r) => ({ ...r, sent: Number(r.sent), approved: Number(r.approved ?? 0) }));
}

/**
 * The newest verification to that number in the service, whatever its status: read through the
 * account's range index (migration 037), so the caller names the service's account and the
 * number's range.
 */
export async function latestVerification(db: Executor, accountId: string, range: string, serviceId: string, recipient: string): Promise<VerificationsTable | undefined> {
  return db
    .selectFrom('verifications')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('range_prefix', '=', range)
    .where('service_id', '=', serviceId)
    .where('recipient', '=', recipient)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(ONE)
    .executeTakeFirst();
}
