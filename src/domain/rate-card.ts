/**
 * Rate cards (DECISIONS.md §11): prefixes of E.164 numbers, each with a price in credits per
 * segment or `blocked`, dated by `effective_from`. A destination's price is that of its longest
 * prefix with an entry in effect; a prefix whose latest entry in effect is a removal counts as
 * absent, so the next shorter one answers.
 */

export type Price = number | 'blocked';
export type EntryKind = 'price' | 'blocked' | 'removed';

export interface RateEntry {
  prefix: string;
  effectiveFrom: number;
  kind: EntryKind;
  /** Set for `price` entries. */
  creditsPerSegment: number | null;
}

/** `+` then at most 15 digits; `+` alone matches every number. */
export const PREFIX_PATTERN = /^\+\d{0,15}$/;
/** A price above this is taken for a typing error rather than a price. */
export const MAX_CREDITS_PER_SEGMENT = 1_000_000;

export function priceOf(entry: RateEntry): Price | null {
  if (entry.kind === 'blocked') return 'blocked';
  if (entry.kind === 'removed') return null;
  return entry.creditsPerSegment ?? 0;
}

export interface PriceMatch {
  prefix: string;
  price: Price;
  effectiveFrom: number;
}

export interface NextChange {
  /** The price from `effectiveFrom` on; null when the destination is no longer priced then. */
  price: Price | null;
  effectiveFrom: number;
}

/**
 * A card in memory: per prefix its entries, oldest first. A lookup tries at most 16 prefixes of
 * the number, each one map access and a walk back over that prefix's few dated entries.
 */
export class RateTable {
  readonly #byPrefix = new Map<string, RateEntry[]>();

  constructor(entries: Iterable<RateEntry>) {
    for (const e of entries) {
      const list = this.#byPrefix.get(e.prefix);
      if (list) list.push(e);
      else this.#byPrefix.set(e.prefix, [e]);
    }
    for (const list of this.#byPrefix.values()) {
      if (list.length > 1) list.sort((a, b) => a.effectiveFrom - b.effectiveFrom);
    }
  }

  get prefixCount(): number {
    return this.#byPrefix.size;
  }

  /** The entry of `prefix` in effect at `at`, removals included. */
  #inEffect(prefix: string, at: number): RateEntry | null {
    const list = this.#byPrefix.get(prefix);
    if (!list) return null;
    for (let i = list.length - 1; i >= 0; i--) {
      if (list[i]!.effectiveFrom <= at) return list[i]!;
    }
    return null;
  }

  /** The price of an E.164 number at `at`, or null when no entry matches. */
  lookup(e164: string, at: number): PriceMatch | null {
    for (let length = Math.min(e164.length, 16); length >= 1; length--) {
      const prefix = e164.slice(0, length);
      const entry = this.#inEffect(prefix, at);
      if (!entry || entry.kind === 'removed') continue;
      return { prefix, price: priceOf(entry)!, effectiveFrom: entry.effectiveFrom };
    }
    return null;
  }

  /** The first dated change after `at` that gives the number another price (or none). */
  nextChange(e164: string, at: number): NextChange | null {
    const current = this.lookup(e164, at);
    const times = new Set<number>();
    for (let length = Math.min(e164.length, 16); length >= 1; length--) {
      for (const e of this.#byPrefix.get(e164.slice(0, length)) ?? []) if (e.effectiveFrom > at) times.add(e.effectiveFrom);
    }
    for (const t of [...times].sort((a, b) => a - b)) {
      const then = this.lookup(e164, t);
      if ((then?.price ?? null) !== (current?.price ?? null)) return { price: then?.price ?? null, effectiveFrom: t };
    }
    return null;
  }

  /** Every prefix in effect at `at` with its price and since when, by prefix. */
  inEffectAt(at: number): Map<string, PriceMatch> {
    const out = new Map<string, PriceMatch>();
    for (const prefix of [...this.#byPrefix.keys()].sort()) {
      const entry = this.#inEffect(prefix, at);
      if (entry && entry.kind !== 'removed') out.set(prefix, { prefix, price: priceOf(entry)!, effectiveFrom: entry.effectiveFrom });
    }
    return out;
  }

  /** Changes dated after `at`, oldest first. */
  scheduledAfter(at: number): RateEntry[] {
    const out: RateEntry[] = [];
    for (const list of this.#byPrefix.values()) for (const e of list) if (e.effectiveFrom > at) out.push(e);
    return out.sort((a, b) => a.effectiveFrom - b.effectiveFrom || (a.prefix < b.prefix ? -1 : a.prefix > b.prefix ? 1 : 0));
  }
}

export type CsvParse = { ok: true; prices: Map<string, Price> } | { ok: false; line: number; reason: string };

function cell(raw: string): string {
  const t = raw.trim();
  return t.length >= 2 && t.startsWith('"') && t.endsWith('"') ? t.slice(1, -1).trim() : t;
}

/**
 * Reads a card's CSV: the header `prefix,credits_per_segment` (line 1), then one entry a line.
 * Blank lines are skipped; anything else that is not an entry is refused with its line number,
 * as is a prefix given twice.
 */
export function parseRateCsv(text: string): CsvParse {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  const header = (lines[0] ?? '').split(',').map((c) => cell(c).toLowerCase());
  if (header.length !== 2 || header[0] !== 'prefix' || header[1] !== 'credits_per_segment') {
    return { ok: false, line: 1, reason: 'the first line must be the header `prefix,credits_per_segment`' };
  }
  const prices = new Map<string, Price>();
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.trim() === '') continue;
    const cells = line.split(',');
    if (cells.length !== 2) return { ok: false, line: i + 1, reason: `expected 2 cells (prefix,credits_per_segment), found ${cells.length}` };
    const prefix = cell(cells[0]!);
    const price = cell(cells[1]!);
    if (!PREFIX_PATTERN.test(prefix)) return { ok: false, line: i + 1, reason: `prefix ${JSON.stringify(prefix.slice(0, 40))} is not + followed by at most 15 digits` };
    let value: Price;
    if (price.toLowerCase() === 'blocked') value = 'blocked';
    else if (/^\d{1,7}$/.test(price) && Number(price) <= MAX_CREDITS_PER_SEGMENT) value = Number(price);
    else return { ok: false, line: i + 1, reason: `credits_per_segment ${JSON.stringify(price.slice(0, 40))} is not a whole number from 0 to ${MAX_CREDITS_PER_SEGMENT.toLocaleString('en')} or \`blocked\`` };
    if (prices.has(prefix)) return { ok: false, line: i + 1, reason: `prefix ${prefix} is given twice` };
    prices.set(prefix, value);
  }
  return { ok: true, prices };
}

export interface DiffRow {
  prefix: string;
  credits_per_segment: Price | null;
  previous?: Price;
}

export interface CardDiff {
  added: DiffRow[];
  raised: DiffRow[];
  lowered: DiffRow[];
  removed: DiffRow[];
  unchanged: number;
}

/** `blocked` ranks above every price: blocking a destination raises it. */
function rank(p: Price): number {
  return p === 'blocked' ? Infinity : p;
}

/**
 * What importing `incoming` over `current` (the card as it will stand when the import takes
 * effect) changes. Without `replace` it merges: prefixes not in the file stay.
 */
export function diffCard(current: ReadonlyMap<string, Price>, incoming: ReadonlyMap<string, Price>, replace: boolean): CardDiff {
  const diff: CardDiff = { added: [], raised: [], lowered: [], removed: [], unchanged: 0 };
  for (const prefix of [...incoming.keys()].sort()) {
    const price = incoming.get(prefix)!;
    const previous = current.get(prefix);
    if (previous === undefined) diff.added.push({ prefix, credits_per_segment: price });
    else if (previous === price) diff.unchanged++;
    else if (rank(price) > rank(previous)) diff.raised.push({ prefix, credits_per_segment: price, previous });
    else diff.lowered.push({ prefix, credits_per_segment: price, previous });
  }
  if (replace) {
    for (const prefix of [...current.keys()].sort()) {
      if (!incoming.has(prefix)) diff.removed.push({ prefix, credits_per_segment: null, previous: current.get(prefix)! });
    }
  }
  return diff;
}

/** The entries that carry a difference out, all dated `at`. */
export function entriesOf(diff: CardDiff, at: number): RateEntry[] {
  const entry = (prefix: string, price: Price | null): RateEntry =>
    price === null
      ? { prefix, effectiveFrom: at, kind: 'removed', creditsPerSegment: null }
      : price === 'blocked'
        ? { prefix, effectiveFrom: at, kind: 'blocked', creditsPerSegment: null }
        : { prefix, effectiveFrom: at, kind: 'price', creditsPerSegment: price };
  return [...diff.added, ...diff.raised, ...diff.lowered, ...diff.removed].map((r) => entry(r.prefix, r.credits_per_segment));
}

/** A card's entries as the CSV it imports from (header first). */
export function rateCsv(prices: Iterable<{ prefix: string; price: Price }>): string {
  let out = 'prefix,credits_per_segment\n';
  for (const { prefix, price } of prices) out += `${prefix},${price}\n`;
  return out;
}

/**
 * What a stored message was charged at acceptance: its `credits`; a message accepted before
 * prices existed (null) was charged one credit per segment, a free one (`charged` 0) nothing.
 */
export function chargedCredits(m: { segments: number | string; credits?: number | string | null; charged?: number | string | null }): number {
  if (Number(m.charged ?? 1) === 0) return 0;
  return m.credits === null || m.credits === undefined ? Number(m.segments) : Number(m.credits);
}
