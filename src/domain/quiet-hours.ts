/**
 * Quiet hours (DECISIONS.md §16): a marketing message reaches a phone only inside the account's
 * sending window in the recipient's local time, in every zone the number may be in. Time zones
 * come from the platform's own data (Intl), so daylight-saving days need nothing of their own.
 */
import { localTimeToInstant, wallClock } from './local-time.ts';

/** Minutes after local midnight: `start` inclusive, `end` exclusive. */
export interface SendingWindow {
  start: number;
  end: number;
}

export const DEFAULT_WINDOW: SendingWindow = { start: 8 * 60, end: 20 * 60 };
/** US TCPA: never before 08:00 nor from 21:00 on; an account may narrow this, never widen it. */
export const WIDEST_WINDOW: SendingWindow = { start: 8 * 60, end: 21 * 60 };
/** Held messages are released spread over the window's first half hour. */
export const RELEASE_SPREAD_MS = 30 * 60_000;
/** Shorter windows would leave no room for the spread. */
const MIN_WINDOW_MINUTES = 60;

const HHMM = /^([01]\d|2[0-3]):([0-5]\d)$/;

export type WindowCheck = { ok: true; window: SendingWindow } | { ok: false; reason: string };

/** `{"start":"08:00","end":"20:00"}` as the account sets it, checked against the widest window. */
export function parseWindow(start: string, end: string): WindowCheck {
  const s = HHMM.exec(start);
  const e = HHMM.exec(end);
  if (!s || !e) return { ok: false, reason: '`start` and `end` must be times of the form HH:MM.' };
  const window = { start: Number(s[1]) * 60 + Number(s[2]), end: Number(e[1]) * 60 + Number(e[2]) };
  if (window.start < WIDEST_WINDOW.start || window.end > WIDEST_WINDOW.end) {
    return { ok: false, reason: 'The sending window must lie within 08:00-21:00.' };
  }
  if (window.end - window.start < MIN_WINDOW_MINUTES) return { ok: false, reason: 'The sending window must be at least an hour long.' };
  return { ok: true, window };
}

export function formatMinutes(minutes: number): string {
  return `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
}

function localMinutes(at: number, zone: string): number {
  const wall = wallClock(at, zone);
  return Math.floor((((wall % 86_400_000) + 86_400_000) % 86_400_000) / 60_000);
}

/** Whether `at` lies inside the window in every one of `zones`. */
export function insideWindow(at: number, zones: readonly string[], window: SendingWindow): boolean {
  return zones.every((zone) => {
    const m = localMinutes(at, zone);
    return m >= window.start && m < window.end;
  });
}

/** The instants of local `minutes` in `zone` on the days around `at` (a skipped time gives none). */
function localInstants(at: number, zone: string, minutes: number): number[] {
  const day = Math.floor(wallClock(at, zone) / 86_400_000) * 86_400_000;
  const out: number[] = [];
  for (let d = -1; d <= 2; d++) {
    const local = new Date(day + d * 86_400_000 + minutes * 60_000).toISOString().slice(0, 16);
    const r = localTimeToInstant(local, zone);
    if (r.ok) out.push(r.at);
  }
  return out;
}

export interface Opening {
  /** When the window next opens in every zone. */
  opensAt: number;
  /** When it next closes in one of them, after `opensAt`. */
  closesAt: number;
}

/**
 * The next time the window is open in every zone, from `at` on; null when it is open at `at`. The
 * common window opens when the last of the zones opens, so the candidates are the zones' local
 * openings; when the zones are too far apart to share any time, the first zone alone decides.
 */
export function nextOpening(at: number, zones: readonly string[], window: SendingWindow): Opening | null {
  if (zones.length === 0 || insideWindow(at, zones, window)) return null;
  const opens = zones.flatMap((zone) => localInstants(at, zone, window.start)).filter((t) => t > at).sort((a, b) => a - b);
  const shared = opens.find((t) => insideWindow(t, zones, window));
  if (shared === undefined) return zones.length > 1 ? nextOpening(at, zones.slice(0, 1), window) : null;
  const closes = zones.flatMap((zone) => localInstants(shared, zone, window.end)).filter((t) => t > shared);
  return { opensAt: shared, closesAt: Math.min(...closes) };
}

/**
 * What a marketing message at `at` waits for: `nextOpening`, or null when it may go now. When the
 * zones are too far apart to share any time in the window (a one-hour window across a country of
 * several zones), `nextOpening` answers for the first zone alone, and so does this: inside that
 * zone's window the message goes, so that it is never held for ever.
 */
export function openingToWaitFor(at: number, zones: readonly string[], window: SendingWindow): Opening | null {
  const opening = nextOpening(at, zones, window);
  if (opening === null || zones.length <= 1 || insideWindow(opening.opensAt, zones, window)) return opening;
  return insideWindow(at, zones.slice(0, 1), window) ? null : opening;
}

/**
 * A held message's release time: spread over the first half hour of the opening (or of the whole
 * shared window, when shorter), by its id, so that the same message always gets the same time and
 * a campaign does not reach the carrier in one burst at the opening.
 */
export function releaseTime(opening: Opening, messageId: string): number {
  let h = 2166136261;
  for (let i = 0; i < messageId.length; i++) h = Math.imul(h ^ messageId.charCodeAt(i), 16777619) >>> 0;
  const span = Math.min(RELEASE_SPREAD_MS, opening.closesAt - opening.opensAt);
  return opening.opensAt + (h % Math.max(1, span));
}
