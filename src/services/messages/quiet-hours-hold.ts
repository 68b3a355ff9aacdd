/**
 * Holding marketing messages outside the recipient's quiet-hours window (DECISIONS.md §16): at
 * acceptance (the send result says `held_until`, the dispatch job is due at the release time) and
 * again where dispatch hands messages to the carrier, as a guard, so that a scheduled message
 * released at night, or one whose job came due early, waits too. Transactional messages (every
 * message without `category = marketing`: opt-out confirmations, HELP answers and replies to
 * inbound messages among them) are never held.
 */
import { nextOpening, releaseTime, type SendingWindow } from '../../domain/quiet-hours.ts';
import { zonesOfNumber } from '../../domain/time-zones.ts';
import type { Executor } from '../../store/connect.ts';
import { accountWindow } from '../accounts/quiet-hours.ts';

export interface Hold {
  /** When the window next opens in every zone of the number: the message's `held_until`. */
  heldUntil: number;
  /** When its dispatch job comes due: within the window's first 30 minutes, by its id. */
  releaseAt: number;
}

/** The hold of one message to `e164` at `now` under `window`, or null when it may go now. */
export function holdOf(window: SendingWindow, e164: string, messageId: string, now: number): Hold | null {
  const opening = nextOpening(now, zonesOfNumber(e164), window);
  return opening === null ? null : { heldUntil: opening.opensAt, releaseAt: releaseTime(opening, messageId) };
}

/** The holds of the marketing messages among `messages` at `now`, by message id (one read per account). */
export async function holdsOf(db: Executor, messages: readonly { id: string; account_id: string; recipient: string; category?: string | null }[], now: number): Promise<Map<string, Hold>> {
  const holds = new Map<string, Hold>();
  const windows = new Map<string, SendingWindow>();
  for (const m of messages) {
    if (m.category !== 'marketing') continue;
    let window = windows.get(m.account_id);
    if (!window) windows.set(m.account_id, (window = await accountWindow(db, m.account_id)));
    const hold = holdOf(window, m.recipient, m.id, now);
    if (hold) holds.set(m.id, hold);
  }
  return holds;
}
