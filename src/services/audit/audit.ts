/**
 * The audit log (DECISIONS.md §15): one small function, `recordAudit`, that the service making a
 * change calls with the change's own transaction, so that a change is never committed without its
 * record; and the reads of the dashboard, the API, the operator console and the CLI.
 *
 * The actor and the address come from the context (`ctx.acting`), which the HTTP layer and the
 * CLI set once per request or command with `actingAs`: no route or command passes them by hand,
 * so none can forget them. A change made without one (a background worker) is Pigeon's own,
 * `system`. Every record's `changes` passes the central redaction (src/domain/audit.ts) first.
 *
 * Sends are not recorded: using a key is not a change, and a send's path never reaches here.
 */
import { userInfo } from 'node:os';
import { AppError, type ErrorDetail } from '../../errors/catalogue.ts';
import {
  AUDIT_ACTIONS,
  parseActionFilter,
  redactChanges,
  SYSTEM_ACTOR,
  type AuditAction,
  type AuditActor,
  type AuditChanges,
  type AuditEvent,
  type AuditTarget,
} from '../../domain/audit.ts';
import type { Executor } from '../../store/connect.ts';
import { countAuditEvents, deleteAuditEventsBefore, insertAuditEvent, listAuditEvents, type AuditEventFilter, type AuditEventRow } from '../../store/repositories/audit-events.repository.ts';
import { newId } from '../../util/ids.ts';
import type { Context } from '../context.ts';

export type { AuditActor, AuditEvent, AuditTarget, AuditChanges, AuditAction } from '../../domain/audit.ts';

/** What a service says about a change it makes. */
export interface AuditEntry {
  action: AuditAction;
  /** The account the change belongs to (null: the installation's, such as a route). */
  accountId: string | null;
  target?: AuditTarget | null;
  changes?: AuditChanges;
  /** Given only where the context cannot know it (a sign-in: nobody is signed in yet). */
  actor?: AuditActor;
  ip?: string | null;
}

/** The context of a request or command made by `actor` from `ip`: what `recordAudit` reads. */
export function actingAs<C extends Context>(ctx: C, actor: AuditActor, ip: string | null = null): C {
  return { ...ctx, acting: { actor, ip } };
}

/** The command line's actor: the account of the machine that ran `pigeon`. */
export function cliActor(): AuditActor {
  let name: string | null = null;
  try {
    name = userInfo().username;
  } catch {
    // No user entry (a container with an arbitrary uid): the command is still recorded.
  }
  return { type: 'cli', id: name, email: null };
}

/**
 * Records one change. Pass the transaction that makes the change (`db`); without one it is
 * written on its own, for changes that are a single statement already committed or refusals.
 */
export async function recordAudit(ctx: Context, entry: AuditEntry, db: Executor = ctx.store.db): Promise<void> {
  const now = ctx.clock();
  const actor = entry.actor ?? ctx.acting?.actor ?? SYSTEM_ACTOR;
  const ip = entry.ip !== undefined ? entry.ip : (ctx.acting?.ip ?? null);
  await insertAuditEvent(db, {
    id: newId('aud', now),
    at: now,
    account_id: entry.accountId,
    actor_type: actor.type,
    actor_id: actor.id,
    actor_email: actor.email,
    action: entry.action,
    target_type: entry.target?.type ?? null,
    target_id: entry.target?.id ?? null,
    ip,
    changes: JSON.stringify(redactChanges(entry.changes ?? {})),
  });
}

/**
 * Refusals recorded per account and action in an hour, at most: a member who forges requests in a
 * loop cannot grow the log without bound (beyond it the refusals are still refused, and logged).
 */
export const MAX_REFUSALS_RECORDED_PER_HOUR = 100;

/** Records a refusal (nothing changed) on its own, within MAX_REFUSALS_RECORDED_PER_HOUR; says whether it did. */
export async function recordRefusal(ctx: Context, entry: AuditEntry & { accountId: string }): Promise<boolean> {
  const since = ctx.clock() - 3_600_000;
  if ((await countAuditEvents(ctx.store.db, { accountId: entry.accountId, action: entry.action, since })) >= MAX_REFUSALS_RECORDED_PER_HOUR) return false;
  await recordAudit(ctx, entry);
  return true;
}

/**
 * Runs `work` in a transaction and records `entry` (or the entry `work` returns) in it. For
 * services whose change is otherwise a single statement.
 */
export async function withAudit<T>(ctx: Context, work: (trx: Executor) => Promise<T>, entry: (result: T) => AuditEntry | null): Promise<T> {
  return ctx.store.db.transaction().execute(async (trx) => {
    const result = await work(trx);
    const e = entry(result);
    if (e) await recordAudit(ctx, e, trx);
    return result;
  });
}

function eventOf(row: AuditEventRow): AuditEvent {
  return {
    id: row.id,
    at: new Date(Number(row.at)).toISOString(),
    account_id: row.account_id,
    actor: { type: row.actor_type as AuditActor['type'], id: row.actor_id, email: row.actor_email },
    action: row.action,
    target: row.target_type === null || row.target_id === null ? null : { type: row.target_type, id: row.target_id },
    ip: row.ip,
    changes: JSON.parse(row.changes) as AuditChanges,
  };
}

/** A filter as the read surfaces take it, every value still text (query string, form, flags). */
export interface AuditQuery {
  accountId?: string | undefined;
  action?: string | undefined;
  since?: string | undefined;
}

export const AUDIT_MAX_LIMIT = 200;

/** Checks a filter; a bad one is `invalid_request` naming each bad field. */
export function auditFilter(q: AuditQuery): AuditEventFilter {
  const details: ErrorDetail[] = [];
  const filter: AuditEventFilter = {};
  if (q.accountId) filter.accountId = q.accountId;
  if (q.action) {
    const parsed = parseActionFilter(q.action);
    if (!parsed) details.push({ field: 'action', code: 'invalid_request', message: `Unknown action ${JSON.stringify(q.action.slice(0, 60))}: name one (such as api_key.created) or its resource (api_key).` });
    else Object.assign(filter, parsed);
  }
  if (q.since) {
    // An ISO 8601 date or date-time; a bare date is midnight UTC.
    const at = /^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(q.since) ? Date.parse(q.since) : Number.NaN;
    if (Number.isNaN(at)) details.push({ field: 'since', code: 'invalid_request', message: '`since` is an ISO 8601 date or date-time, such as 2026-11-28 or 2026-11-28T18:00:00Z.' });
    else filter.since = at;
  }
  if (details.length > 0) throw new AppError('invalid_request', details.map((d) => d.message).join(' '), { details });
  return filter;
}

/** A page of records, newest first, with the total the filter matches. */
export async function auditEventsPage(ctx: Context, q: AuditQuery, page: number, limit: number): Promise<{ data: AuditEvent[]; pagination: { page: number; limit: number; total: number } }> {
  const filter = auditFilter(q);
  const [rows, total] = await Promise.all([listAuditEvents(ctx.store.read, filter, limit, (page - 1) * limit), countAuditEvents(ctx.store.read, filter)]);
  return { data: rows.map(eventOf), pagination: { page, limit, total } };
}

/** Every record a filter matches, newest first, in pages (the CSV export and `pigeon audit list`), at most `max`. */
export async function* allAuditEvents(ctx: Context, q: AuditQuery, max = 100_000): AsyncGenerator<AuditEvent> {
  const filter = auditFilter(q);
  let seen = 0;
  for (let offset = 0; seen < max; offset += 500) {
    const rows = await listAuditEvents(ctx.store.read, filter, Math.min(500, max - seen), offset);
    for (const row of rows) yield eventOf(row);
    seen += rows.length;
    if (rows.length < 500) return;
  }
}

/**
 * The retention of the log: records older than RETENTION_AUDIT_DAYS go, oldest first, in batches
 * of `batchSize`, each its own statement; `between` runs between two batches (the purge's rest).
 */
export async function purgeAuditEvents(ctx: Context, batchSize: number, between: () => Promise<void>): Promise<{ removed: number; batches: number }> {
  const before = ctx.clock() - ctx.config.retention.auditDays * 86_400_000;
  let removed = 0;
  let batches = 0;
  for (;;) {
    const n = await deleteAuditEventsBefore(ctx.store.db, before, batchSize);
    if (n === 0) return { removed, batches };
    removed += n;
    batches++;
    if (n < batchSize) return { removed, batches };
    await between();
  }
}

export const KNOWN_ACTIONS = Object.keys(AUDIT_ACTIONS) as AuditAction[];
