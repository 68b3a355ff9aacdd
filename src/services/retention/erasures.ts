/**
 * Erasure of a phone number (DECISIONS.md §13): `POST /v1/privacy/erasures` for the caller's
 * account, `pigeon privacy erase` for one account or the whole installation. The request is
 * recorded (`erasures`, the operator's record) and done by the erasure sweeper within seconds:
 * every stored message to the number and inbound message from it is redacted (text removed,
 * number masked), with the stored payloads of their webhook events, the account events that name
 * the number and the stored idempotent responses that hold it. A message still on its way is
 * redacted once it is final: until then the erasure stays `pending`. Opt-outs keep the number, so
 * that it goes on blocking sends (docs/privacy.md).
 */
import { parseRecipient } from '../../domain/phone-number.ts';
import { maskNumber, redactPayload, REDACTED_TEXT } from '../../domain/redaction.ts';
import { AppError } from '../../errors/catalogue.ts';
import type { ErasuresTable } from '../../store/database.ts';
import { inboundById, setInboundSenderAndBody } from '../../store/repositories/inbound-messages.repository.ts';
import { redactMessageRows } from '../../store/repositories/messages.repository.ts';
import {
  accountEventsContaining,
  accountRetention,
  accountsRetention,
  erasureById,
  finalMessagesToNumber,
  forgetSmppAddresses,
  idempotentResponsesContaining,
  inboundFromNumber,
  insertErasure,
  listErasures as listErasureRows,
  openMessageToNumber,
  pendingErasures,
  setIdempotentResponse,
  updateErasure,
} from '../../store/repositories/retention.repository.ts';
import { eventPayloadsOfInbound, eventPayloadsOfMessages, setEventPayload } from '../../store/repositories/webhook-events.repository.ts';
import { retryingConflicts } from '../../store/retry-conflicts.ts';
import { iso, newId } from '../../util/ids.ts';
import { recordAudit } from '../audit/audit.ts';
import type { Context } from '../context.ts';

const BATCH = 200;

/** An erasure as the API and the CLI show it. */
export interface ErasureView {
  id: string;
  /** null: every account of the installation (an operator's erasure). */
  account_id: string | null;
  /** The number, masked: the record of an erasure does not keep what it erased. */
  phone: string;
  status: 'pending' | 'done';
  requested_by: 'api' | 'operator';
  counts: { messages: number; inbound_messages: number; events: number; idempotent_responses: number };
  created_at: string;
  finished_at: string | null;
}

function view(row: ErasuresTable): ErasureView {
  return {
    id: row.id,
    account_id: row.account_id,
    phone: row.phone,
    status: row.status,
    requested_by: row.requested_by,
    counts: { messages: Number(row.messages), inbound_messages: Number(row.inbound), events: Number(row.events), idempotent_responses: Number(row.responses) },
    created_at: iso(Number(row.created_at)) as string,
    finished_at: row.finished_at === null ? null : iso(Number(row.finished_at)),
  };
}

/**
 * The number to erase, normalised as sends normalise recipients. Only the masked form is kept in
 * the record once the erasure is done; until then the full number is needed to find the rows.
 */
function phoneOf(raw: unknown): string {
  if (typeof raw !== 'string') throw new AppError('invalid_number', '`phone` must be a phone number in E.164 form, such as +447700900123.');
  const parsed = parseRecipient(raw);
  if (!parsed.ok) throw new AppError('invalid_number', `\`phone\`: ${parsed.reason}`);
  return parsed.e164;
}

export async function requestErasure(ctx: Context, opts: { accountId: string | null; phone: unknown; by: 'api' | 'operator' }): Promise<ErasureView> {
  const phone = phoneOf(opts.phone);
  const now = ctx.clock();
  const row: ErasuresTable = {
    id: newId('era', now),
    account_id: opts.accountId,
    phone,
    requested_by: opts.by,
    status: 'pending',
    messages: 0,
    inbound: 0,
    events: 0,
    responses: 0,
    created_at: now,
    finished_at: null,
  };
  if (opts.accountId !== null && !(await accountRetention(ctx.store.db, opts.accountId))) throw new AppError('not_found', `No account ${opts.accountId}.`);
  await ctx.store.db.transaction().execute(async (trx) => {
    await insertErasure(trx, row);
    // The log keeps the number masked, as the erasure leaves it everywhere else.
    await recordAudit(ctx, { action: 'erasure.requested', accountId: opts.accountId, target: { type: 'erasure', id: row.id }, changes: { phone: [null, maskNumber(phone)], scope: [null, opts.accountId ?? 'installation'] } }, trx);
  });
  return { ...view(row), phone: maskNumber(phone) };
}

/** One of the account's erasures (an operator's erasure of every account is not the account's). */
export async function getErasure(ctx: Context, accountId: string, id: string): Promise<ErasureView> {
  const row = id.length > 100 ? undefined : await erasureById(ctx.store.db, id);
  if (!row || row.account_id !== accountId) throw new AppError('not_found', `No erasure ${id}.`);
  return { ...view(row), phone: maskNumber(row.phone) };
}

/** Every erasure, newest first: the operator's record. */
export async function listErasures(ctx: Context, limit = 100): Promise<ErasureView[]> {
  return (await listErasureRows(ctx.store.db, limit)).map((r) => ({ ...view(r), phone: maskNumber(r.phone) }));
}

/** Runs the pending erasures as far as they can go; returns how many rows it redacted. */
export async function runErasures(ctx: Context): Promise<number> {
  let work = 0;
  for (const erasure of await pendingErasures(ctx.store.db, 20)) work += await runErasure(ctx, erasure);
  return work;
}

/**
 * The operator's erasure (`pigeon privacy erase`): recorded, then done at once as far as it can
 * go (what is still on its way is left to the sweeper); returns its record.
 */
export async function eraseNow(ctx: Context, opts: { accountId: string | null; phone: unknown }): Promise<ErasureView> {
  const requested = await requestErasure(ctx, { ...opts, by: 'operator' });
  const row = await erasureById(ctx.store.db, requested.id);
  if (row) await runErasure(ctx, row);
  const done = await erasureById(ctx.store.db, requested.id);
  return { ...view(done ?? (row as ErasuresTable)), phone: requested.phone };
}

async function runErasure(ctx: Context, erasure: ErasuresTable): Promise<number> {
  const { id, account_id: accountId, phone } = erasure;
  const counts = { messages: 0, inbound: 0, events: 0, responses: 0 };
  const inTransaction = <T>(work: (trx: Context['store']['db']) => Promise<T>) =>
    retryingConflicts(() => ctx.store.db.transaction().execute((trx) => work(trx as unknown as Context['store']['db'])));
  // Account by account, so that every lookup is a seek in an index that starts with the account;
  // for the whole installation, the unrouted inbound messages (no account) too.
  const scopes: (string | null)[] = accountId !== null ? [accountId] : [...(await accountsRetention(ctx.store.db)).map((a) => a.id), null];
  let open = false;
  for (const scope of scopes) {
    if (scope !== null) await eraseMessagesIn(scope);
    await eraseInboundIn(scope);
    if (scope !== null && (await openMessageToNumber(ctx.store.db, scope, phone))) open = true;
  }

  async function eraseMessagesIn(scope: string): Promise<void> {
    // Masked rows no longer match the number, so each batch finds the next ones.
    for (;;) {
      const rows = await finalMessagesToNumber(ctx.store.db, scope, phone, BATCH);
      if (rows.length === 0) break;
      await inTransaction(async (trx) => {
        const ids = rows.map((r) => r.id);
        await redactMessageRows(trx, ids);
        await forgetSmppAddresses(trx, ids, maskNumber(phone));
        for (const event of await eventPayloadsOfMessages(trx, ids)) {
          const payload = redactPayload(event.payload, [phone]);
          if (payload !== event.payload) {
            await setEventPayload(trx, event.id, payload);
            counts.events++;
          }
        }
        counts.messages += ids.length;
      });
    }
  }

  async function eraseInboundIn(scope: string | null): Promise<void> {
    for (;;) {
      const rows = await inboundFromNumber(ctx.store.db, scope, phone, BATCH);
      if (rows.length === 0) break;
      await inTransaction(async (trx) => {
        for (const { id: inboundId } of rows) {
          const row = await inboundById(trx, inboundId);
          if (!row) continue;
          await setInboundSenderAndBody(trx, row.id, maskNumber(row.sender), REDACTED_TEXT);
          for (const event of await eventPayloadsOfInbound(trx, row.id)) {
            const payload = redactPayload(event.payload, [phone]);
            if (payload !== event.payload) {
              await setEventPayload(trx, event.id, payload);
              counts.events++;
            }
          }
          counts.inbound++;
        }
      });
    }
  }

  await inTransaction(async (trx) => {
    // Opt-outs and opt-ins made by API or operator name the number in `data.phone`.
    for (const event of await accountEventsContaining(trx, accountId, phone)) {
      const payload = redactPayload(event.payload, [phone]);
      if (payload !== event.payload) {
        await setEventPayload(trx, event.id, payload);
        counts.events++;
      }
    }
    for (const stored of await idempotentResponsesContaining(trx, accountId, phone)) {
      const body = redactPayload(stored.response_body, [phone]);
      if (body !== stored.response_body) {
        await setIdempotentResponse(trx, stored.account_id, stored.key, body);
        counts.responses++;
      }
    }
  });
  const now = ctx.clock();
  await updateErasure(ctx.store.db, id, {
    messages: Number(erasure.messages) + counts.messages,
    inbound: Number(erasure.inbound) + counts.inbound,
    events: Number(erasure.events) + counts.events,
    responses: Number(erasure.responses) + counts.responses,
    // Once done, the record keeps the number masked only: it must not hold what it erased.
    ...(open ? {} : { status: 'done' as const, finished_at: now, phone: maskNumber(phone) }),
  });
  return counts.messages + counts.inbound + counts.events + counts.responses + (open ? 0 : 1);
}

