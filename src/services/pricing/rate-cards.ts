/**
 * Managing rate cards (DECISIONS.md §11): listing, showing and exporting them, importing a CSV
 * (merged, or replacing the card) with the difference it makes, and choosing an account's card.
 * An import is read and compared first; applying it writes every change in one transaction, so a
 * card is never half imported.
 */
import { diffCard, entriesOf, parseRateCsv, RateTable, rateCsv, type CardDiff, type Price, type RateEntry } from '../../domain/rate-card.ts';
import { parseRfc3339 } from '../../domain/scheduling.ts';
import { AppError } from '../../errors/catalogue.ts';
import {
  DEFAULT_CARD,
  listRateCards,
  rateCardEntries,
  rateCardExists,
  setAccountRateCard as storeAccountRateCard,
  writeRateCardEntries,
  type CardSummary,
} from '../../store/repositories/rate-cards.repository.ts';
import { recordAudit } from '../audit/audit.ts';
import { findAccount } from '../../store/repositories/accounts.repository.ts';
import type { Context } from '../context.ts';
import { invalidatePrices, toRateEntries } from './price-cache.ts';

export { DEFAULT_CARD };
export type RateCardSummary = CardSummary;

/** The largest card file read: some 400,000 lines of `+NNNNNNNNNN,NNN`. */
export const MAX_RATE_CSV_BYTES = 8 * 1024 * 1024;
/** An effective date this far back is taken as now (clocks differ); earlier ones are refused. */
const PAST_SKEW_MS = 60_000;
const CARD_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

export function checkCardName(name: string): string {
  if (!CARD_NAME.test(name)) throw new AppError('invalid_request', 'A rate card name is 1 to 64 letters, digits, `-` or `_`, starting with a letter or digit.');
  return name;
}

async function existingCard(ctx: Context, name: string): Promise<string> {
  checkCardName(name);
  if (!(await rateCardExists(ctx.store.db, name))) throw new AppError('not_found', `No rate card named ${name}.`);
  return name;
}

export async function listCards(ctx: Context): Promise<RateCardSummary[]> {
  return listRateCards(ctx.store.db);
}

async function tableOf(ctx: Context, name: string): Promise<RateTable> {
  return new RateTable(toRateEntries(await rateCardEntries(ctx.store.db, name)));
}

export interface ShownEntry {
  prefix: string;
  credits_per_segment: Price;
  effective_from: string;
}

export interface ScheduledChange {
  prefix: string;
  /** null: the prefix is taken off the card then. */
  credits_per_segment: Price | null;
  effective_from: string;
}

export interface ShownCard {
  card: string;
  at: number;
  entries: ShownEntry[];
  /** Changes dated after `at`, oldest first. */
  scheduled: ScheduledChange[];
}

const iso = (ms: number) => new Date(ms).toISOString();

function scheduledView(e: RateEntry): ScheduledChange {
  return { prefix: e.prefix, credits_per_segment: e.kind === 'removed' ? null : e.kind === 'blocked' ? 'blocked' : (e.creditsPerSegment ?? 0), effective_from: iso(e.effectiveFrom) };
}

/** Parses an RFC 3339 time given to a command or a form; `what` names it in the refusal. */
export function timeArgument(text: string | undefined, what: string): number | undefined {
  if (text === undefined || text === '') return undefined;
  const at = parseRfc3339(text);
  if (Number.isNaN(at)) throw new AppError('invalid_request', `${what} must be an RFC 3339 time, such as 2026-12-01T00:00:00Z.`);
  return at;
}

/** The card as it stands at `at` (default now), with the changes dated after it. */
export async function showCard(ctx: Context, name: string, at?: number): Promise<ShownCard> {
  await existingCard(ctx, name);
  const when = at ?? ctx.clock();
  const table = await tableOf(ctx, name);
  const entries = [...table.inEffectAt(when).values()].map((m) => ({ prefix: m.prefix, credits_per_segment: m.price, effective_from: iso(m.effectiveFrom) }));
  return { card: name, at: when, entries, scheduled: table.scheduledAfter(when).map(scheduledView) };
}

/** The card at `at` (default now) as the CSV an import reads. */
export async function exportCard(ctx: Context, name: string, at?: number): Promise<string> {
  const shown = await showCard(ctx, name, at);
  return rateCsv(shown.entries.map((e) => ({ prefix: e.prefix, price: e.credits_per_segment })));
}

export interface ImportOptions {
  replace?: boolean;
  /** When the changes take effect; default now. */
  effectiveFrom?: number;
  /** Compare only: write nothing. */
  dryRun?: boolean;
}

export interface ImportResult {
  card: string;
  created: boolean;
  applied: boolean;
  effective_from: string;
  diff: CardDiff;
}

function readCsv(text: string): Map<string, Price> {
  if (Buffer.byteLength(text) > MAX_RATE_CSV_BYTES) {
    throw new AppError('payload_too_large', `A rate card file is at most ${MAX_RATE_CSV_BYTES / 1024 / 1024} MiB.`);
  }
  const parsed = parseRateCsv(text);
  if (!parsed.ok) throw new AppError('invalid_rate_card', `Line ${parsed.line}: ${parsed.reason}. Nothing was changed.`);
  return parsed.prices;
}

/**
 * Compares the file with the card as it will stand at the effective time and, unless a dry
 * run, writes the difference dated then, in one transaction (creating the card if new). Throws
 * `invalid_rate_card` naming the first bad line, with nothing changed.
 */
export async function importCard(ctx: Context, name: string, csv: string, options: ImportOptions = {}): Promise<ImportResult> {
  checkCardName(name);
  const incoming = readCsv(csv);
  const now = ctx.clock();
  let at = options.effectiveFrom ?? now;
  if (at < now - PAST_SKEW_MS) throw new AppError('invalid_request', 'The effective time is in the past: prices change from now on, never for messages already accepted.');
  at = Math.max(at, now);
  const compare = async (db: Context['store']['db']) => {
    const exists = await rateCardExists(db, name);
    const table = new RateTable(toRateEntries(exists ? await rateCardEntries(db, name) : []));
    const current = new Map([...table.inEffectAt(at)].map(([prefix, m]) => [prefix, m.price]));
    return { exists, diff: diffCard(current, incoming, options.replace === true) };
  };
  if (options.dryRun) {
    const { exists, diff } = await compare(ctx.store.db);
    return { card: name, created: !exists, applied: false, effective_from: iso(at), diff };
  }
  const result = await ctx.store.db.transaction().execute(async (trx) => {
    const { exists, diff } = await compare(trx);
    const rows = entriesOf(diff, at).map((e) => ({ card: name, prefix: e.prefix, effective_from: e.effectiveFrom, kind: e.kind, credits_per_segment: e.creditsPerSegment }));
    if (rows.length > 0 || !exists) await writeRateCardEntries(trx, name, rows, at, now);
    await recordAudit(
      ctx,
      {
        action: 'rate_card.imported',
        accountId: null,
        target: { type: 'rate_card', id: name },
        changes: {
          effective_from: [null, iso(at)],
          added: [null, diff.added.length],
          raised: [null, diff.raised.length],
          lowered: [null, diff.lowered.length],
          removed: [null, diff.removed.length],
          ...(!exists ? { card: [null, name] } : {}),
        },
      },
      trx,
    );
    return { exists, diff };
  });
  invalidatePrices(ctx.store);
  ctx.log.info({ card: name, effectiveFrom: at, added: result.diff.added.length, raised: result.diff.raised.length, lowered: result.diff.lowered.length, removed: result.diff.removed.length }, 'rate card imported');
  return { card: name, created: !result.exists, applied: true, effective_from: iso(at), diff: result.diff };
}

/** Gives an account a card (`default` included). */
export async function setAccountRateCard(ctx: Context, accountId: string, card: string): Promise<{ id: string; rate_card: string }> {
  await existingCard(ctx, card);
  await ctx.store.db.transaction().execute(async (trx) => {
    // Thrown inside, so that an unknown account rolls back the revision's move too.
    const before = await findAccount(trx, accountId);
    if (!(await storeAccountRateCard(trx, accountId, card))) throw new AppError('not_found', `No account ${accountId}.`);
    await recordAudit(ctx, { action: 'account.rate_card_changed', accountId, target: { type: 'account', id: accountId }, changes: { rate_card: [before?.rate_card ?? null, card] } }, trx);
  });
  invalidatePrices(ctx.store);
  return { id: accountId, rate_card: card };
}
