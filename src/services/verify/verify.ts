/**
 * Verify (DECISIONS.md §14): services, verifications and checks.
 *
 * A verification's message is accepted by `sendMessage`, the path of `POST /v1/sms/send`, so it is
 * checked, priced, debited, routed and reported like any other. The message row holds the text
 * with the code masked; the text with the code is written beside it, in the acceptance's
 * transaction, to `verify_texts`, which only dispatch reads (dispatch-messages.ts) at every
 * attempt, so a retried or re-leased dispatch sends the same code. That row goes when the
 * verification leaves `pending`, and the message's validity period is the verification's
 * lifetime, so a code never outlives its use in Pigeon.
 *
 * A recipient's STOP refuses their codes too (`recipient_opted_out`), as Twilio refuses a Verify
 * SMS to a number that replied STOP until it replies START.
 */
import { createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import type { Transaction } from 'kysely';
import { AppError } from '../../errors/catalogue.ts';
import { countryOfNumber } from '../../domain/national-number.ts';
import { parseRecipient } from '../../domain/phone-number.ts';
import {
  blockDurationMs,
  codeHash,
  codeMatches,
  CONVERSION_WINDOW_MS,
  conversionBlocks,
  DEFAULT_TEMPLATE,
  generateCode,
  MAX_PER_NUMBER_PER_HOUR,
  MAX_PER_RANGE_PER_HOUR,
  maskedText,
  rangeOf,
  renderTemplate,
  RESEND_GAP_MS,
  retryAfterSeconds,
  VELOCITY_WINDOW_MS,
} from '../../domain/verify.ts';
import type { Store } from '../../store/connect.ts';
import type { Database, VerificationStatus, VerificationsTable, VerifyBlocksTable, VerifyServicesTable } from '../../store/database.ts';
import { findAccount } from '../../store/repositories/accounts.repository.ts';
import * as repo from '../../store/repositories/verify.repository.ts';
import { iso, newId } from '../../util/ids.ts';
import { isUniqueViolation } from '../../store/dialect.ts';
import { approvedSenderName } from '../auth/access.ts';
import { recordAudit } from '../audit/audit.ts';
import type { Context } from '../context.ts';
import type { Finish } from '../messages/idempotency.ts';
import { sendMessage, type Sender } from '../messages/submit-messages.ts';

type AccessSnapshot = NonNullable<Sender['access']>;
import { queueAccountEvent } from '../webhooks/account-events.ts';
import { closeByCheck, takeCheck } from './check-taker.ts';

export type FraudGuard = 'block' | 'monitor' | 'off';

export interface ServiceInput {
  name?: string;
  from?: string;
  code_length?: number;
  lifetime_seconds?: number;
  allowed_countries?: string[] | null;
  fraud_guard?: FraudGuard;
  template?: string;
}

export interface ServiceView {
  id: string;
  name: string;
  from: string;
  code_length: number;
  lifetime_seconds: number;
  max_checks: number;
  max_sends: number;
  allowed_countries: string[] | null;
  fraud_guard: FraudGuard;
  template: string;
  created_at: string;
}

export interface VerificationView {
  id: string;
  service_id: string;
  to: string;
  status: VerificationStatus;
  expires_at: string;
  sends: number;
  checks_left: number;
  message_id: string | null;
  credits_used: number;
}

export function serviceView(s: VerifyServicesTable): ServiceView {
  return {
    id: s.id,
    name: s.name,
    from: s.sender,
    code_length: Number(s.code_length),
    lifetime_seconds: Number(s.lifetime_seconds),
    max_checks: Number(s.max_checks),
    max_sends: Number(s.max_sends),
    allowed_countries: s.allowed_countries === null ? null : s.allowed_countries.split(','),
    fraud_guard: s.fraud_guard,
    template: s.template ?? DEFAULT_TEMPLATE,
    created_at: iso(Number(s.created_at)),
  };
}

export function verificationView(v: VerificationsTable): VerificationView {
  return {
    id: v.id,
    service_id: v.service_id,
    to: v.recipient,
    status: v.status,
    expires_at: iso(Number(v.expires_at)),
    sends: Number(v.sends),
    checks_left: Number(v.checks_left),
    message_id: v.message_id,
    credits_used: Number(v.credits_used),
  };
}

const keys = new WeakMap<Store, Promise<KeyObject>>();

/** The installation's HMAC key for codes: made on first use, kept in `installation_secrets`. */
function codeKey(ctx: Context): Promise<KeyObject> {
  let key = keys.get(ctx.store);
  if (!key) {
    key = repo.installationSecret(ctx.store.db, 'verify_code_key', () => randomBytes(32).toString('hex'), ctx.clock()).then((hex) => createSecretKey(Buffer.from(hex, 'hex')));
    key.catch(() => keys.delete(ctx.store));
    keys.set(ctx.store, key);
  }
  return key;
}

function invalid(field: string, message: string): AppError {
  return new AppError('invalid_request', `\`${field}\` ${message}`, { details: [{ field, code: 'invalid_request', message }] });
}

function checkServiceFields(input: ServiceInput): void {
  if (input.name !== undefined && (input.name.trim() === '' || input.name.length > 30)) throw invalid('name', 'must be 1 to 30 characters.');
  if (input.code_length !== undefined && (!Number.isInteger(input.code_length) || input.code_length < 4 || input.code_length > 10)) throw invalid('code_length', 'must be 4 to 10.');
  if (input.lifetime_seconds !== undefined && (!Number.isInteger(input.lifetime_seconds) || input.lifetime_seconds < 60 || input.lifetime_seconds > 3600)) {
    throw invalid('lifetime_seconds', 'must be 60 to 3600.');
  }
  if (input.allowed_countries) {
    for (const c of input.allowed_countries) if (!/^[A-Z]{2}$/.test(c)) throw invalid('allowed_countries', 'must list ISO 3166 alpha-2 codes such as "GB".');
  }
  if (input.template !== undefined && (!input.template.includes('{code}') || input.template.length > 160)) throw invalid('template', 'must contain {code} and be at most 160 characters.');
}

export async function createService(ctx: Context, accountId: string, access: AccessSnapshot | undefined, input: ServiceInput & { name: string; from: string }): Promise<ServiceView> {
  checkServiceFields(input);
  const sender = await approvedSenderName(ctx, accountId, input.from, access);
  const now = ctx.clock();
  const row: VerifyServicesTable = {
    id: newId('vsv', now),
    account_id: accountId,
    name: input.name.trim(),
    sender,
    code_length: input.code_length ?? 6,
    lifetime_seconds: input.lifetime_seconds ?? 600,
    max_checks: 5,
    max_sends: 5,
    allowed_countries: input.allowed_countries ? [...new Set(input.allowed_countries)].join(',') : null,
    fraud_guard: input.fraud_guard ?? 'block',
    template: input.template ?? null,
    created_at: now,
    deleted_at: null,
  };
  await repo.insertService(ctx.store.db, row);
  return serviceView(row);
}

export async function getService(ctx: Context, accountId: string, id: string): Promise<VerifyServicesTable> {
  const row = await repo.liveService(ctx.store, accountId, id);
  if (!row) throw new AppError('not_found', 'No verify service with that id.');
  return row;
}

export async function listServices(ctx: Context, accountId: string): Promise<ServiceView[]> {
  return (await repo.servicesOf(ctx.store.db, accountId)).map(serviceView);
}

export async function updateService(ctx: Context, accountId: string, access: AccessSnapshot | undefined, id: string, input: ServiceInput): Promise<ServiceView> {
  await getService(ctx, accountId, id);
  checkServiceFields(input);
  const changes: Partial<VerifyServicesTable> = {};
  if (input.name !== undefined) changes.name = input.name.trim();
  if (input.from !== undefined) changes.sender = await approvedSenderName(ctx, accountId, input.from, access);
  if (input.code_length !== undefined) changes.code_length = input.code_length;
  if (input.lifetime_seconds !== undefined) changes.lifetime_seconds = input.lifetime_seconds;
  if (input.allowed_countries !== undefined) changes.allowed_countries = input.allowed_countries ? [...new Set(input.allowed_countries)].join(',') : null;
  if (input.fraud_guard !== undefined) changes.fraud_guard = input.fraud_guard;
  if (input.template !== undefined) changes.template = input.template;
  if (Object.keys(changes).length > 0) await repo.updateService(ctx.store.db, accountId, id, changes);
  return serviceView(await getService(ctx, accountId, id));
}

export async function deleteService(ctx: Context, accountId: string, id: string): Promise<void> {
  await getService(ctx, accountId, id);
  await repo.updateService(ctx.store.db, accountId, id, { deleted_at: ctx.clock() });
}

async function announce(trx: Transaction<Database>, accountId: string, event: `verification.${'approved' | 'canceled' | 'expired' | 'max_attempts_reached' | 'blocked'}`, v: VerificationsTable, now: number): Promise<void> {
  const account = await findAccount(trx, accountId);
  await queueAccountEvent(trx, { account_id: accountId, events_url: account?.events_url ?? null }, event, verificationView(v) as unknown as Record<string, unknown>, now, null);
}

function rateLimited(message: string, seconds: number): AppError {
  return new AppError('rate_limit_exceeded', message, { headers: { 'Retry-After': String(seconds) } });
}

/** Why a verification's acceptance did not go in, found in its transaction (`admit`); createOnce acts on it. */
class Admitted extends Error {
  constructor(
    readonly outcome:
      | { kind: 'pending'; verification: VerificationsTable }
      | { kind: 'pending_in_group' }
      | { kind: 'stale_service' }
      | { kind: 'blocked'; newBlock: boolean },
  ) {
    super(outcome.kind);
  }
}

/**
 * The keys of a new verification in its group's tally (`guard`, `countAdmitted`), made once per
 * create: its number and range in the service (velocity), its range in the account (conversion,
 * and a block recorded earlier in the group), and whether one is pending to its number.
 */
interface TallyKeys {
  number: string;
  range: string;
  sent: string;
  blocked: string;
  pending: string;
}

function tallyKeys(service: VerifyServicesTable, e164: string, range: string): TallyKeys {
  return {
    number: `number\u0000${service.id}\u0000${e164}`,
    range: `range\u0000${service.id}\u0000${range}`,
    sent: `sent\u0000${service.account_id}\u0000${range}`,
    blocked: `blocked\u0000${service.account_id}\u0000${range}`,
    pending: `pending\u0000${service.id}\u0000${e164}`,
  };
}

/**
 * The fraud guard's rules 2 and 3 for a new verification (rule 1, the country, comes first in
 * `createOnce`), judged on figures read in the transaction that accepts its message, before any of
 * its group's admissions: they count every verification committed before it, and `tally` adds
 * those admitted (and ranges blocked) before it in the same group, so parallel creates cannot all
 * pass a limit that one of them reaches. Returns the 429 for
 * velocity, else whether the range is blocked, with the block to record when the conversion rule
 * calls for a new one (counted in the tally already).
 */
function guard(service: VerifyServicesTable, range: string, now: number, f: repo.GuardFigures, tally: Map<string, number>, keys: TallyKeys): AppError | { blocked: boolean; newBlock: VerifyBlocksTable | null } {
  const counted = (key: string) => tally.get(key) ?? 0;
  if (Number(f.safe) > 0) return { blocked: false, newBlock: null };
  if (Number(f.per_number) + counted(keys.number) >= MAX_PER_NUMBER_PER_HOUR) {
    return rateLimited(`At most ${MAX_PER_NUMBER_PER_HOUR} verifications an hour to one number.`, retryAfterSeconds(f.per_number_oldest === null ? now : Number(f.per_number_oldest), VELOCITY_WINDOW_MS, now));
  }
  if (Number(f.per_range) + counted(keys.range) >= MAX_PER_RANGE_PER_HOUR) {
    return rateLimited(`At most ${MAX_PER_RANGE_PER_HOUR} verifications an hour to one number range.`, retryAfterSeconds(f.per_range_oldest === null ? now : Number(f.per_range_oldest), VELOCITY_WINDOW_MS, now));
  }
  // Blocked before, or by an admission earlier in this group (its block is not in `f`).
  if ((f.blocked_until !== null && Number(f.blocked_until) > now) || tally.has(keys.blocked)) return { blocked: true, newBlock: null };
  const sent = Number(f.sent) + counted(keys.sent);
  const approved = Number(f.approved ?? 0);
  if (!conversionBlocks(sent, approved)) return { blocked: false, newBlock: null };
  const level = f.block_level === null ? 0 : Number(f.block_level) + 1;
  tally.set(keys.blocked, 1);
  return { blocked: true, newBlock: { account_id: service.account_id, range_prefix: range, level, blocked_at: now, blocked_until: now + blockDurationMs(level), sent, approved } };
}

/** Counts a verification admitted in a group, for the admissions after it (`guard`, `admit`). */
function countAdmitted(tally: Map<string, number>, keys: TallyKeys): void {
  for (const key of [keys.number, keys.range, keys.sent, keys.pending]) tally.set(key, (tally.get(key) ?? 0) + 1);
}

const maskedTexts = new WeakMap<VerifyServicesTable, string>();

/** The text a service's messages are stored with, its code masked: once per reading of the service (the access cache keeps one). */
function maskedTextOf(service: VerifyServicesTable): string {
  let text = maskedTexts.get(service);
  if (text === undefined) maskedTexts.set(service, (text = maskedText(service.template ?? DEFAULT_TEMPLATE, service.name, Number(service.code_length))));
  return text;
}

/** Whether two readings of a service agree in every column. */
function sameService(a: VerifyServicesTable, b: VerifyServicesTable): boolean {
  return (Object.keys(a) as (keyof VerifyServicesTable)[]).every((k) => String(a[k]) === String(b[k]));
}

/**
 * The service a create sends for. With the sender's access snapshot it comes from the access cache:
 * a change to a service moves the access revision (migration 036), and the create's transaction
 * reads the service again when the revision moved since (`admit`). A service not found is never
 * cached, so a new one is seen at once.
 */
function serviceToSend(ctx: Context, sender: Sender, id: string, cached: boolean): VerifyServicesTable | Promise<VerifyServicesTable> {
  const key = `${sender.accountId}\u0000${id}`;
  const hit = cached ? sender.access?.peek<VerifyServicesTable>('verify-service', key) : undefined;
  return hit ?? loadServiceToSend(ctx, sender, id, cached, key);
}

async function loadServiceToSend(ctx: Context, sender: Sender, id: string, cached: boolean, key: string): Promise<VerifyServicesTable> {
  const load = async () => (await repo.liveService(ctx.store, sender.accountId, id)) ?? undefined;
  const row = cached && sender.access ? await sender.access.get('verify-service', key, load) : await load();
  if (!row) throw new AppError('not_found', 'No verify service with that id.');
  return row;
}

export interface CreateResult {
  verification: VerificationView;
  created: boolean;
}

/**
 * `POST /v1/verify/services/{id}/verifications`: a new verification, or the same code sent again
 * under the id of the one pending to that number. `confirmAccess` confirms a sender authenticated
 * to be checked at commit (src/http/auth.ts) before a write outside the acceptance: a resend's
 * reservation, a blocked verification's row.
 */
export async function createVerification(ctx: Context, sender: Sender, serviceId: string, to: string, finish?: Finish, confirmAccess?: () => Promise<void>): Promise<CreateResult> {
  let cached = true;
  for (let attempt = 0; ; attempt++) {
    try {
      return await createOnce(ctx, sender, serviceId, to, cached, finish, confirmAccess);
    } catch (error) {
      if (attempt >= 3) throw error instanceof Admitted ? new AppError('service_unavailable', 'The verify service changed while the code was being sent; try again.') : error;
      // The service changed since it was cached: again, with the service read now.
      if (error instanceof Admitted && error.outcome.kind === 'stale_service') cached = false;
      // Another create for this number went in first: in this one's group (now committed), or in
      // another process's transaction (the unique index of migration 032: this one's transaction
      // was rolled back whole, nothing sent or charged). This one is now a send again of that
      // verification's code, refused as any within 30 s.
      else if (!(error instanceof Admitted && error.outcome.kind === 'pending_in_group') && !isUniqueViolation(error)) throw error;
    }
  }
}

async function createOnce(ctx: Context, sender: Sender, serviceId: string, to: string, cached: boolean, finish?: Finish, confirmAccess?: () => Promise<void>): Promise<CreateResult> {
  const found = serviceToSend(ctx, sender, serviceId, cached);
  const service = found instanceof Promise ? await found : found;
  const recipient = parseRecipient(to);
  if (!recipient.ok) throw new AppError('invalid_recipient', `\`to\` is not a valid E.164 number: ${recipient.reason}`);
  const e164 = recipient.e164;
  const country = countryOfNumber(e164) ?? null;
  if (service.allowed_countries !== null && (country === null || !service.allowed_countries.split(',').includes(country))) {
    throw new AppError('verify_country_blocked', `The service sends codes only to ${service.allowed_countries.split(',').join(', ')}.`);
  }
  const now = ctx.clock();
  const id = newId('ver', now);
  const row: VerificationsTable = {
    id,
    account_id: service.account_id,
    service_id: service.id,
    recipient: e164,
    range_prefix: rangeOf(e164),
    country,
    code_hash: null,
    status: 'pending',
    sends: 0,
    checks_left: Number(service.max_checks),
    message_id: null,
    credits_used: 0,
    last_sent_at: null,
    expires_at: now + Number(service.lifetime_seconds) * 1000,
    created_at: now,
    updated_at: now,
  };
  const code = generateCode(Number(service.code_length));
  row.code_hash = codeHash(await codeKey(ctx), id, code);
  const messageId = newId('msg', now);
  const text = renderTemplate(service.template ?? DEFAULT_TEMPLATE, service.name, code);
  const keys = tallyKeys(service, e164, row.range_prefix);
  let sent: VerificationsTable | undefined;
  let newBlock = false;
  let expired = false;
  const grantedAt = sender.access?.revision;
  try {
    await sendMessage(
      ctx,
      sender,
      { to: e164, from: service.sender, message: text, validity_period: Number(service.lifetime_seconds) },
      undefined,
      {
        messageId,
        storedBody: maskedTextOf(service),
        // The guard's counts and the number's pending verification, one range at a time.
        admitLock: `${service.account_id}:${row.range_prefix}`,
        // With the guard off, only whether one is pending to the number.
        admitRead: {
          ...(service.fraud_guard === 'off' ? { read: repo.pendingOf, statement: repo.pendingStatement } : { read: repo.guardFiguresOf, statement: repo.guardFiguresStatement }),
          question: { serviceId: service.id, accountId: service.account_id, recipient: e164, range: row.range_prefix, velocitySince: now - VELOCITY_WINDOW_MS, conversionSince: now - CONVERSION_WINDOW_MS } satisfies repo.GuardQuestion,
        },
        admit: async (trx, { revision, tally }, answer) => {
          newBlock = false;
          expired = false;
          if (revision !== null && grantedAt !== undefined && revision > grantedAt) {
            const current = await repo.liveServiceIn(trx, service.account_id, service.id);
            if (!current) return new AppError('not_found', 'No verify service with that id.');
            if (!sameService(current, service)) return new Admitted({ kind: 'stale_service' });
          }
          if (tally.has(keys.pending)) return new Admitted({ kind: 'pending_in_group' });
          const read = answer as { pending: number | null };
          const figures = service.fraud_guard === 'off' ? null : (answer as repo.GuardFigures);
          const pending = read.pending !== null ? await repo.pendingTo(trx, service.id, e164) : undefined;
          if (pending && Number(pending.expires_at) > now) return new Admitted({ kind: 'pending', verification: pending });
          // Past its expiry but not yet swept: expired now, so the new one may be the number's pending one.
          if (pending && (await repo.closeVerification(trx, pending.id, 'expired', now))) {
            await announce(trx as Transaction<Database>, pending.account_id, 'verification.expired', { ...pending, status: 'expired', updated_at: now }, now);
            expired = true;
          }
          if (figures !== null) {
            const verdict = guard(service, row.range_prefix, now, figures, tally, keys);
            if (verdict instanceof AppError) return verdict;
            if (verdict.newBlock) await repo.upsertBlock(trx, verdict.newBlock);
            newBlock = verdict.newBlock !== null;
            if (verdict.blocked && service.fraud_guard === 'block') return new Admitted({ kind: 'blocked', newBlock });
          }
          countAdmitted(tally, keys);
          return null;
        },
        beside: (message) => {
          sent = { ...row, sends: 1, message_id: messageId, credits_used: Number(message.credits ?? 0), last_sent_at: now };
          return [
            { table: 'verifications', row: sent },
            { table: 'verify_texts', row: { message_id: messageId, verification_id: id, body: text } },
          ];
        },
        write: async (trx) => {
          // Monitor mode: the block is recorded and announced once, and the code goes out anyway.
          if (newBlock) await announce(trx as Transaction<Database>, service.account_id, 'verification.blocked', sent!, now);
          if (finish) await finish(trx, { status: 201, body: { status: 'success', data: verificationView(sent!) } });
        },
        writes: () => newBlock || finish !== undefined,
      },
    );
  } catch (error) {
    if (expired) ctx.wake('webhook');
    if (!(error instanceof Admitted)) throw error;
    if (error.outcome.kind === 'pending') {
      await confirmAccess?.();
      return { verification: await resend(ctx, sender, service, error.outcome.verification, ctx.clock(), finish), created: false };
    }
    if (error.outcome.kind === 'blocked') {
      await confirmAccess?.();
      const refused = { ...row, code_hash: null, status: 'blocked' as const, checks_left: 0 };
      await ctx.store.db.transaction().execute(async (trx) => {
        await repo.insertVerification(trx, refused);
        await announce(trx, service.account_id, 'verification.blocked', refused, now);
      });
      ctx.wake('webhook');
      throw new AppError('verify_blocked_fraud', `Codes to ${row.range_prefix}xxx are blocked by the fraud guard; nothing was sent or charged.`);
    }
    throw error;
  }
  if (newBlock || expired) ctx.wake('webhook');
  return { verification: verificationView(sent!), created: true };
}

async function resend(ctx: Context, sender: Sender, service: VerifyServicesTable, v: VerificationsTable, now: number, finish?: Finish): Promise<VerificationView> {
  if (Number(v.sends) >= Number(service.max_sends)) throw new AppError('verify_max_sends', `The code was sent ${v.sends} times, the most this service allows.`);
  const last = v.last_sent_at === null ? 0 : Number(v.last_sent_at);
  const tooSoon = () => rateLimited('A code is sent again at least 30 seconds after the previous send.', Math.max(1, Math.ceil((last + RESEND_GAP_MS - now) / 1000)));
  if (now - last < RESEND_GAP_MS) throw tooSoon();
  // The code is not kept, so the same code is sent again from the text kept for dispatch.
  const text = (await repo.verifyTexts(ctx.store.db, [v.message_id!])).get(v.message_id!);
  if (text === undefined) throw new AppError('not_found', 'No pending verification to send again.');
  // The send is reserved first by one conditional UPDATE, so parallel resends cannot pass
  // `max_sends` or the 30 s gap; a send that is then refused gives its reservation back.
  const reserved = await repo.reserveResend(ctx.store.db, v.id, Number(service.max_sends), now - RESEND_GAP_MS, now);
  if (reserved === 'max_sends') throw new AppError('verify_max_sends', 'The code was sent as many times as the service allows.');
  if (reserved === 'too_soon') throw tooSoon();
  if (reserved === 'closed') throw new AppError('not_found', 'No pending verification to send again.');
  const messageId = newId('msg', now);
  let view: VerificationView | undefined;
  try {
    await sendMessage(
      ctx,
      sender,
      { to: v.recipient, from: service.sender, message: text, validity_period: Math.max(1, Math.floor((Number(v.expires_at) - now) / 1000)) },
      undefined,
      {
        messageId,
        storedBody: maskedTextOf(service),
        write: async (trx, message) => {
          const credits = Number(message.credits ?? 0);
          await repo.recordResentMessage(trx, v.id, messageId, credits);
          await repo.insertVerifyText(trx, messageId, v.id, text);
          view = verificationView({ ...v, sends: Number(v.sends) + 1, message_id: messageId, credits_used: Number(v.credits_used) + credits, last_sent_at: now, updated_at: now });
          if (finish) await finish(trx, { status: 201, body: { status: 'success', data: view } });
        },
      },
    );
  } catch (error) {
    await repo.releaseResend(ctx.store.db, v.id, v.last_sent_at === null ? null : Number(v.last_sent_at));
    throw error;
  }
  return view!;
}

export async function getVerification(ctx: Context, accountId: string, id: string): Promise<VerificationView> {
  const v = await repo.verificationById(ctx.store.db, accountId, id);
  if (!v) throw new AppError('not_found', 'No verification with that id.');
  return verificationView(await settleExpiry(ctx, v));
}

/** A pending verification read after its expiry is expired now (with its event), not at the next sweep. */
async function settleExpiry(ctx: Context, v: VerificationsTable): Promise<VerificationsTable> {
  const now = ctx.clock();
  if (v.status !== 'pending' || Number(v.expires_at) > now) return v;
  await expireOne(ctx, v, now);
  return (await repo.verificationById(ctx.store.db, v.account_id, v.id)) ?? v;
}

async function expireOne(ctx: Context, v: VerificationsTable, now: number): Promise<boolean> {
  const done = await ctx.store.db.transaction().execute(async (trx) => {
    if (!(await repo.closeVerification(trx, v.id, 'expired', now))) return false;
    await announce(trx, v.account_id, 'verification.expired', { ...v, status: 'expired', updated_at: now }, now);
    return true;
  });
  if (done) ctx.wake('webhook');
  return done;
}

/** Expires pending verifications past their lifetime, each with its event; how many it expired. */
export async function expireVerifications(ctx: Context, limit = 500): Promise<number> {
  const now = ctx.clock();
  let expired = 0;
  for (const v of await repo.expiredPending(ctx.store.db, now, limit)) if (await expireOne(ctx, v, now)) expired++;
  return expired;
}

export async function cancelVerification(ctx: Context, accountId: string, id: string): Promise<VerificationView> {
  const v = await settleExpiry(ctx, (await repo.verificationById(ctx.store.db, accountId, id)) ?? ((): never => { throw new AppError('not_found', 'No verification with that id.'); })());
  const now = ctx.clock();
  const closed = await ctx.store.db.transaction().execute(async (trx) => {
    if (!(await repo.closeVerification(trx, v.id, 'canceled', now))) return false;
    await announce(trx, accountId, 'verification.canceled', { ...v, status: 'canceled', updated_at: now }, now);
    return true;
  });
  if (!closed) throw new AppError('not_found', 'No pending verification with that id.');
  ctx.wake('webhook');
  return verificationView({ ...v, status: 'canceled', updated_at: now });
}

/** `POST /v1/verify/services/{id}/verifications/{vid}`-style approval without a code (Twilio's `Status=approved`). */
export async function approveVerification(ctx: Context, accountId: string, id: string): Promise<VerificationView> {
  const v = await repo.verificationById(ctx.store.db, accountId, id);
  if (!v || v.status !== 'pending' || Number(v.expires_at) <= ctx.clock()) throw new AppError('not_found', 'No pending verification with that id.');
  const now = ctx.clock();
  const done = await ctx.store.db.transaction().execute(async (trx) => {
    if (!(await repo.closeVerification(trx, v.id, 'approved', now))) return false;
    await announce(trx, accountId, 'verification.approved', { ...v, status: 'approved', updated_at: now }, now);
    return true;
  });
  if (!done) throw new AppError('not_found', 'No pending verification with that id.');
  ctx.wake('webhook');
  return verificationView({ ...v, status: 'approved', updated_at: now });
}

export interface CheckResult {
  id: string;
  status: VerificationStatus;
  valid: boolean;
  checks_left: number;
}

/**
 * `POST /v1/verify/services/{id}/checks`. One check is taken from the verification by a
 * conditional UPDATE before the code is compared, so parallel checks never evaluate more codes
 * than `max_checks`. That UPDATE names the verification, its service and account, so a check that
 * finds its verification pending is that one statement (in a group commit: check-taker.ts); only
 * one that does not looks further, to say why. A request authenticated without reading the access
 * revision (`access`: the revision its key was checked at, as a send's) takes its check only while
 * that revision stands (`takeCheckIn`); otherwise it confirms its access first and goes the slow way.
 */
export async function checkCode(
  ctx: Context,
  accountId: string,
  serviceId: string,
  target: { to?: string; verification_id?: string },
  code: string,
  access?: { revision: number; confirm: () => Promise<void> },
): Promise<CheckResult> {
  const now = ctx.clock();
  const recipient = target.verification_id === undefined && target.to !== undefined ? parseRecipient(target.to) : undefined;
  const granted = access?.revision ?? null;
  let taken: VerificationsTable | undefined;
  if (target.verification_id !== undefined) taken = await takeCheck(ctx.store, { accountId, serviceId, target: { id: target.verification_id }, now, granted });
  else if (recipient?.ok) taken = await takeCheck(ctx.store, { accountId, serviceId, target: { recipient: recipient.e164 }, now, granted });
  if (!taken) {
    await access?.confirm();
    taken = await takeCheckSlowly(ctx, accountId, serviceId, target, now);
  }
  const left = Number(taken.checks_left) - 1;
  const valid = /^\d{4,10}$/.test(code) && taken.code_hash !== null && codeMatches(await codeKey(ctx), taken.id, code, taken.code_hash);
  const next: VerificationStatus | null = valid ? 'approved' : left === 0 ? 'max_attempts_reached' : null;
  if (next === null) return { id: taken.id, status: 'pending', valid: false, checks_left: left };
  const closed = await closeByCheck(ctx.store, { accountId, id: taken.id, status: next, now, data: verificationView({ ...taken, status: next, checks_left: left, updated_at: now }) as unknown as Record<string, unknown> });
  // Canceled or expired between the taken check and now: the code no longer counts.
  if (!closed) throw noPendingToCheck();
  ctx.wake('webhook');
  return { id: taken.id, status: next, valid, checks_left: left };
}

function noPendingToCheck(): AppError {
  return new AppError('not_found', 'No pending verification to check.');
}

/**
 * A check whose verification was not found pending at once: the service, the target and the
 * verification are looked at one by one, each refusal in its order, a verification past its
 * expiry is expired (with its event), and a check is taken if one is left after all.
 */
async function takeCheckSlowly(ctx: Context, accountId: string, serviceId: string, target: { to?: string; verification_id?: string }, now: number): Promise<VerificationsTable> {
  const service = await getService(ctx, accountId, serviceId);
  let found: VerificationsTable | undefined;
  if (target.verification_id !== undefined) {
    found = await repo.verificationById(ctx.store.db, accountId, target.verification_id);
    if (found && found.service_id !== service.id) found = undefined;
  } else if (target.to !== undefined) {
    const recipient = parseRecipient(target.to);
    if (!recipient.ok) throw new AppError('invalid_recipient', `\`to\` is not a valid E.164 number: ${recipient.reason}`);
    found = await repo.pendingVerification(ctx.store.db, service.id, recipient.e164, now);
  } else {
    throw invalid('to', 'or `verification_id` is required.');
  }
  if (found) found = await settleExpiry(ctx, found);
  if (!found || found.status !== 'pending' || found.code_hash === null) throw noPendingToCheck();
  const taken = await repo.takeCheck(ctx.store.db, found.id, now);
  if (!taken) throw noPendingToCheck();
  return taken;
}

/** The safe list: numbers and range prefixes the velocity and conversion rules never refuse. */
export async function addSafeListEntry(ctx: Context, accountId: string, entry: string): Promise<{ entry: string; created: boolean }> {
  if (!/^\+\d{4,15}$/.test(entry)) throw invalid('entry', 'must be a number or a number prefix: + and 4 to 15 digits.');
  return { entry, created: await repo.addSafeListEntry(ctx.store.db, accountId, entry, ctx.clock()) };
}

export async function listSafeList(ctx: Context, accountId: string): Promise<{ entry: string; created_at: string }[]> {
  return (await repo.safeList(ctx.store.db, accountId)).map((e) => ({ entry: e.entry, created_at: iso(Number(e.created_at)) }));
}

export async function removeSafeListEntry(ctx: Context, accountId: string, entry: string): Promise<void> {
  if (!(await repo.deleteSafeListEntry(ctx.store.db, accountId, entry))) throw new AppError('not_found', 'That entry is not on the safe list.');
}

export interface BlockView {
  account_id: string;
  range: string;
  blocked_at: string;
  blocked_until: string;
  level: number;
  sent: number;
  approved: number;
}

export async function listBlocks(ctx: Context, accountId?: string): Promise<BlockView[]> {
  return (await repo.activeBlocks(ctx.store.db, ctx.clock(), accountId)).map((b) => ({
    account_id: b.account_id,
    range: b.range_prefix,
    blocked_at: iso(Number(b.blocked_at)),
    blocked_until: iso(Number(b.blocked_until)),
    level: Number(b.level),
    sent: Number(b.sent),
    approved: Number(b.approved),
  }));
}

/** Ends a range's block now (its level stays, so a new block of it lasts longer); recorded in the audit log. */
export async function unblockRange(ctx: Context, accountId: string, range: string): Promise<void> {
  const ended = await ctx.store.db.transaction().execute(async (trx) => {
    if (!(await repo.endBlock(trx, accountId, range, ctx.clock()))) return false;
    await recordAudit(ctx, { action: 'verify.range_unblocked', accountId, target: { type: 'verify_range', id: range } }, trx);
    return true;
  });
  if (!ended) throw new AppError('not_found', 'That range is not blocked.');
}

export async function conversionByServiceAndCountry(ctx: Context, accountId?: string) {
  return repo.conversionStats(ctx.store.db, accountId, ctx.clock() - CONVERSION_WINDOW_MS);
}
