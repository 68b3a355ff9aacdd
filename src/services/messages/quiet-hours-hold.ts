/**
 * Holding marketing messages outside the recipient's quiet-hours window (DECISIONS.md §16): at
 * acceptance (the send result says `held_until`, the dispatch job is due at the release time) and
 * again where dispatch hands messages to the carrier, as a guard, so that a scheduled message
 * released at night, or one whose job came due early, waits too. Transactional messages (every
 * message without `category = marketing`: opt-out confirmations, HELP answers and replies to
 * inbound messages among them) are never held.
 */
import { openingToWaitFor, releaseTime, type Opening, type SendingWindow } from '../../domain/quiet-hours.ts';
import { zonesOfNumber } from '../../domain/time-zones.ts';
import type { Executor } from '../../store/connect.ts';
import type { MessagesTable } from '../../store/database.ts';
import { accountWindow } from '../accounts/quiet-hours.ts';

export interface Hold {
  /** When the window next opens in every zone of the number: the message's `held_until`. */
  heldUntil: number;
  /** When its dispatch job comes due: within the window's first 30 minutes, by its id. */
  releaseAt: number;
}

/**
 * The window's next opening for numbers at `now` under `window` (null: open now), remembered per
 * set of zones: the numbers of a campaign share a few dozen sets, and each opening costs a few
 * dozen Intl look-ups.
 */
export function openings(window: SendingWindow, now: number): (e164: string) => Opening | null {
  const known = new Map<string, Opening | null>();
  return (e164) => {
    const zones = zonesOfNumber(e164);
    const key = zones.join(' ');
    let opening = known.get(key);
    if (opening === undefined) known.set(key, (opening = openingToWaitFor(now, zones, window)));
    return opening;
  };
}

function holdWith(openingOf: (e164: string) => Opening | null, e164: string, messageId: string): Hold | null {
  const opening = openingOf(e164);
  return opening === null ? null : { heldUntil: opening.opensAt, releaseAt: releaseTime(opening, messageId) };
}

/**
 * Holds the marketing rows of one account accepted for dispatch now (not scheduled ones: their
 * window is checked when they are released, at dispatch) that are outside their recipient's
 * window: sets `held_until` on each (null on the others) and returns when each held one's dispatch
 * job is due, for the acceptance (acceptance-batcher.ts); undefined when none is held.
 */
export async function holdAtAcceptance(db: Executor, accountId: string, rows: MessagesTable[], now: number): Promise<Map<string, number> | undefined> {
  const marketing = rows.filter((r) => r.category === 'marketing' && r.status === 'pending');
  if (marketing.length === 0) return undefined;
  const openingOf = openings(await accountWindow(db, accountId), now);
  const releaseAt = new Map<string, number>();
  for (const row of marketing) {
    const hold = holdWith(openingOf, row.recipient, row.id);
    row.held_until = hold?.heldUntil ?? null;
    if (hold) releaseAt.set(row.id, hold.releaseAt);
  }
  return releaseAt.size > 0 ? releaseAt : undefined;
}

/**
 * When a marketing message to `e164` going out at `at` would be held until: the window's next
 * opening in every zone of the number; null when it is open then. What a quote says (one read).
 */
export async function heldUntilAt(db: Executor, accountId: string, e164: string, at: number): Promise<number | null> {
  return openings(await accountWindow(db, accountId), at)(e164)?.opensAt ?? null;
}

/** The holds of the marketing messages among `messages` at `now`, by message id (one read per account). */
export async function holdsOf(db: Executor, messages: readonly { id: string; account_id: string; recipient: string; category?: string | null }[], now: number): Promise<Map<string, Hold>> {
  const holds = new Map<string, Hold>();
  const byAccount = new Map<string, (e164: string) => Opening | null>();
  for (const m of messages) {
    if (m.category !== 'marketing') continue;
    let openingOf = byAccount.get(m.account_id);
    if (!openingOf) byAccount.set(m.account_id, (openingOf = openings(await accountWindow(db, m.account_id), now)));
    const hold = holdWith(openingOf, m.recipient, m.id);
    if (hold) holds.set(m.id, hold);
  }
  return holds;
}
