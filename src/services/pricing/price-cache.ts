/**
 * Each process keeps the rate cards it has used in memory (a map of prefix to dated entries per
 * card, src/domain/rate-card.ts) and each account's card, and trusts them as long as the
 * database's rate card revision stands still. That counter moves in the transaction of every
 * change to a card or to an account's card, whichever process makes it (the CLI, the console);
 * a process reads it (one row) at most once a second, on its next lookup after that second, so a
 * change reaches every process within that time without a query per message. A change made in
 * this process is seen at once.
 */
import { RateTable, type RateEntry } from '../../domain/rate-card.ts';
import type { Store } from '../../store/connect.ts';
import { accountRateCard, DEFAULT_CARD, rateCardEntries, readRateCardRevision } from '../../store/repositories/rate-cards.repository.ts';

/** How long a read of the revision is trusted, in wall-clock milliseconds. */
export const PRICE_REVISION_POLL_MS = 1000;
/** Past this many accounts remembered, the account-to-card map starts again empty. */
const MAX_ACCOUNTS = 100_000;

interface State {
  revision: number;
  checkedAt: number;
  refreshing: Promise<void> | null;
  cards: Map<string, Promise<RateTable>>;
  accounts: Map<string, string>;
}

const states = new WeakMap<Store, State>();

function stateOf(store: Store): State {
  let s = states.get(store);
  if (!s) {
    s = { revision: -1, checkedAt: -Infinity, refreshing: null, cards: new Map(), accounts: new Map() };
    states.set(store, s);
  }
  return s;
}

async function fresh(store: Store): Promise<State> {
  const s = stateOf(store);
  if (performance.now() - s.checkedAt < PRICE_REVISION_POLL_MS) return s;
  s.refreshing ??= (async () => {
    try {
      const revision = await readRateCardRevision(store.db);
      s.checkedAt = performance.now();
      if (revision !== s.revision) {
        s.revision = revision;
        s.cards = new Map();
        s.accounts = new Map();
      }
    } finally {
      s.refreshing = null;
    }
  })();
  await s.refreshing;
  return s;
}

/** After a change made in this process: the next lookup reads the revision again. */
export function invalidatePrices(store: Store): void {
  stateOf(store).checkedAt = -Infinity;
}

export function toRateEntries(rows: { prefix: string; effective_from: number; kind: RateEntry['kind']; credits_per_segment: number | null }[]): RateEntry[] {
  return rows.map((r) => ({ prefix: r.prefix, effectiveFrom: r.effective_from, kind: r.kind, creditsPerSegment: r.credits_per_segment }));
}

/** A card as it stands in the database (cached). */
export async function rateTable(store: Store, card: string): Promise<RateTable> {
  const s = await fresh(store);
  let table = s.cards.get(card);
  if (!table) {
    const cards = s.cards;
    table = rateCardEntries(store.db, card).then((rows) => new RateTable(toRateEntries(rows)));
    cards.set(card, table);
    table.catch(() => {
      if (cards.get(card) === table) cards.delete(card);
    });
  }
  return table;
}

/** The card an account uses (cached); `default` for an unknown account. */
export async function rateCardOf(store: Store, accountId: string): Promise<string> {
  const s = await fresh(store);
  const known = s.accounts.get(accountId);
  if (known !== undefined) return known;
  const accounts = s.accounts;
  const card = (await accountRateCard(store.db, accountId)) ?? DEFAULT_CARD;
  if (accounts.size >= MAX_ACCOUNTS) accounts.clear();
  accounts.set(accountId, card);
  return card;
}
